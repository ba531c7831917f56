from __future__ import annotations

import asyncio
import json

import pytest
from bigloop_eval.bfcl_multi import MultiCase
from bigloop_eval.bfcl_run import load_any, run_one

from bigloop import ScriptedModel, UserError


def test_cases_of_any_category_load_and_run() -> None:
    single = load_any("simple_python", 1)[0]
    multi = load_any("multi_turn_base", 1)[0]
    assert isinstance(multi, MultiCase) and not isinstance(single, MultiCase)
    reply = json.dumps({"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}})
    result = asyncio.run(run_one(single, ScriptedModel([reply]), "loop"))
    assert result.valid and result.category == "simple_python"


def test_modes_a_category_does_not_support_are_clear_errors() -> None:
    single = load_any("simple_python", 1)[0]
    multi = load_any("multi_turn_base", 1)[0]
    with pytest.raises(UserError, match="--mode graph is for the multi-turn"):
        asyncio.run(run_one(single, ScriptedModel([]), "graph"))
    with pytest.raises(UserError, match="--mode retrieve is for the single-turn"):
        asyncio.run(run_one(multi, ScriptedModel([]), "retrieve"))
