"""Agents as atoms, and teams of them.

- `Agent` (agent.py): instructions + model + tools + memory, with its own card; callable
  like any atom (`as_tool`). `Memory` (memory.py): its long-term notes in a folder,
  recalled with the registry's hybrid search.
- Team patterns, each a traced, resumable run whose every message between agents is a
  step (record.py): `Orchestrator` (orchestrate.py: a coordinator delegates subtasks to
  workers picked by their cards and merges the results), `Debate` (debate.py: n agents,
  r rounds, early stop on agreement, a judge), `Handoff` (handoff.py: an agent passes the
  conversation to another).

This layer sits above the loop (an agent runs a `Loop`); semantic adapters, which need
only a model, are in `bigloop.policies.adapt`.
"""

from __future__ import annotations

from bigloop.team.agent import Agent
from bigloop.team.debate import Debate, normalize
from bigloop.team.handoff import Handoff
from bigloop.team.memory import Memory
from bigloop.team.orchestrate import Orchestrator, Subtask
from bigloop.team.record import Reply, TeamRun

__all__ = [
    "Agent",
    "Debate",
    "Handoff",
    "Memory",
    "Orchestrator",
    "Reply",
    "Subtask",
    "TeamRun",
    "normalize",
]
