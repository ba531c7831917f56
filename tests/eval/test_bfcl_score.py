from __future__ import annotations

from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_score import score


def test_scoring_uses_bfcl_checker() -> None:
    case = load_cases("simple_python", 1)[0]
    assert case.id == "simple_python_0"
    good = score(case, [("calculate_triangle_area", {"base": 10, "height": 5})])
    assert good.valid and good.error_type is None
    wrong = score(case, [("calculate_triangle_area", {"base": 11, "height": 5})])
    assert not wrong.valid and wrong.error_type == "value_error:others"
    assert score(case, []).error_type == "simple_function_checker:wrong_count"
    irrelevant = load_cases("irrelevance", 1)[0]
    assert score(irrelevant, []).valid
    assert not score(irrelevant, [("f", {})]).valid
