"""Planners: the scheduling strategies (`react`, `graph`, `search`, `auto`), each an async
generator of a run's steps over a `bigloop.runtime.context.RunContext`."""
