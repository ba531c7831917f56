"""Scoring with BFCL's own AST checker.

Importing the checker imports `bfcl_eval.constants.model_config`, which imports every vendor
SDK BFCL supports; the checker only reads it to decide whether a model's function names
had "." replaced by "_". A small module of ours stands in for it: bigloop keeps names as
given.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bigloop_eval.bfcl_data import Case

MODEL_NAME = "bigloop"


@dataclass(kw_only=True)
class Score:
    valid: bool
    error_type: str | None = None
    errors: list[str] | None = None


@dataclass
class _NameConfig:
    underscore_to_dot: bool = False


class _AnyModel(dict[str, _NameConfig]):
    def __missing__(self, key: str) -> _NameConfig:
        return _NameConfig()


def checker() -> tuple[Callable[..., dict[str, Any]], Any]:
    """BFCL's single-turn AST checker and its `Language` enum. Calling it first also
    installs the stand-in for BFCL's model config, which BFCL's multi-turn checker needs
    too."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stand_in = types.ModuleType(name)
        stand_in.MODEL_CONFIG_MAPPING = _AnyModel()  # type: ignore[attr-defined]
        sys.modules[name] = stand_in
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language


def score(case: Case, calls: list[tuple[str, Any]]) -> Score:
    """Score the calls a model made on `case`, as BFCL does."""
    if "irrelevance" in case.category:
        ok = not calls
        return Score(valid=ok, error_type=None if ok else "irrelevance_error:decoder_success")
    if case.category == "live_relevance":
        ok = bool(calls)
        return Score(valid=ok, error_type=None if ok else "relevance_error:decoder_failed")
    if case.answer is None:
        return Score(valid=False, error_type="missing_answer")
    ast_checker, language = checker()
    output = [{name: args if isinstance(args, dict) else {}} for name, args in calls]
    try:
        result = ast_checker(
            case.functions, output, case.answer, language(case.language), case.category, MODEL_NAME
        )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return Score(valid=False, error_type="checker_error", errors=[f"{type(e).__name__}: {e}"])
    if result["valid"]:  # the checker leaves a placeholder error_type on success
        return Score(valid=True)
    return Score(valid=False, error_type=result.get("error_type"), errors=result.get("error"))
