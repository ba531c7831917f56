"""Optimization from feedback: what the traces and outcomes teach about which atom to use.

For now the routing learners: `bandit.BanditPolicy` (which atom to prefer per kind of
task) and `observe.learn_cards` (atom cards with observed reliability and latency).
"""
