"""One BFCL case of any category: single-turn cases to `bfcl_single`, multi-turn ones to
`bfcl_multi`. What a worker process runs (`distributed`) and what `bfcl.run_category`
runs in this one."""

from __future__ import annotations

from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel
from bigloop.config import LoopConfig
from bigloop_eval.bfcl_data import MULTI_TURN, load_cases
from bigloop_eval.bfcl_multi import load_multi_cases, run_multi_case
from bigloop_eval.bfcl_results import CaseResult, Mode
from bigloop_eval.bfcl_single import run_case


def load_any(category: str, limit: int | None = None) -> list[Any]:
    """Cases of any supported category, single- or multi-turn."""
    if category in MULTI_TURN:
        return load_multi_cases(category, limit)
    return load_cases(category, limit)


async def run_one(
    case: Any,
    model: ChatModel,
    mode: Mode,
    clarify: bool = False,
    config: LoopConfig | None = None,
) -> CaseResult:
    """Run and score one case of any category.

    Raises:
        UserError: a mode the case's category does not support (graph: multi-turn only;
            retrieve: single-turn only; config: single-turn only).
    """
    if case.category not in MULTI_TURN:
        return await run_case(case, model, mode, config=config)
    if config is not None:
        raise UserError("--config is for the single-turn categories.")
    if mode == "retrieve":
        raise UserError("--mode retrieve is for the single-turn categories.")
    return await run_multi_case(case, model, mode, clarify=clarify)
