"""`rank_tools`: the tools in order of relevance to the task (a tool selector)."""

from __future__ import annotations

from dataclasses import dataclass

from bigloop.atoms.models.base import ToolSpec
from bigloop.policies.select import rank_tools


@dataclass(kw_only=True)
class RankTools:
    """Orders tools by BM25 relevance to the task (small models favour the first one
    listed); keeps the first `top_k` (None: all)."""

    top_k: int | None = None
    name: str = "rank_tools"

    def select(self, task: str, specs: list[ToolSpec]) -> list[ToolSpec]:
        return rank_tools(task, specs)[: self.top_k]
