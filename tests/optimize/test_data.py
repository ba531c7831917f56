"""The data step: failures grouped by kind, BFCL cases made like them (checked with
BFCL's own checker, offline), and the optimizer training the later steps on them."""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path

import pytest
from bigloop_eval.benches import BfclBench
from bigloop_eval.bfcl_data import Case, load_cases
from bigloop_eval.bfcl_score import score
from bigloop_eval.bfcl_variants import number_variant

from bigloop import FunctionModel, Message, ToolSpec, UserError
from bigloop.config import Demo, DemoCall, LoopConfig
from bigloop.optimize.bench import Example, Outcome, Split
from bigloop.optimize.data import MakesVariants, cluster_failures, evolve, signature
from bigloop.optimize.evaluate import Evaluator
from bigloop.optimize.feedback import critique
from bigloop.optimize.optimizer import ALL_STEPS, STEPS, Optimizer
from bigloop.trace.records import Step
from bigloop.trace.store import TraceStore


def failed(critique_text: str, example_id: str = "x") -> Outcome:
    return Outcome(example_id=example_id, score=0.0, critique=critique_text)


def test_the_signature_is_the_kind_the_critique_names() -> None:
    bfcl = "BFCL checker: value_error:others: Invalid value for parameter 'x' (calls made: [])"
    assert signature(failed(bfcl)) == "value_error:others"
    assert signature(failed("BFCL checker: type_error:simple: wrong")) == "type_error:simple"
    assert signature(failed("BFCL checker: checker_error: TypeError: x")) == "checker_error"
    assert signature(failed("BFCL checker: value_error:list/tuple: x")) == "value_error:list/tuple"
    steps = [
        Step(run_id="r", index=0, kind="model", name="m"),
        Step(
            run_id="r",
            index=1,
            kind="tool",
            name="add_days",
            input={"date": "May 3 (a Friday)"},
            output="date: not a date",
            error="invalid_arguments",
        ),
        Step(run_id="r", index=2, kind="tool", name="f", error="tool_error"),
    ]
    suite = critique("check: expected 2024-05-06 (answer: 'soon')", steps)
    assert signature(failed(suite)) == "invalid_arguments"  # the first kind named
    unreadable = critique("", [Step(run_id="r", index=0, kind="model", name="m", error="x")])  # type: ignore[arg-type]
    assert signature(failed(unreadable)) == "unreadable_reply"
    ended = "check: no answer\nthe run ended budget_exceeded: 8 steps"
    assert signature(failed(ended)) == "budget_exceeded"
    assert signature(failed("check: the answer lacks 42")) == "other"
    assert signature(failed("")) == "other"


def test_failures_cluster_largest_first_ties_by_name_passes_left_out() -> None:
    kinds = ["type_error:simple", "value_error:others", "value_error:others", "a:b", "ok"]
    pairs = [
        (
            Example(id=f"e{k}", task="t"),
            Outcome(example_id=f"e{k}", score=1.0)
            if kind == "ok"
            else failed(f"BFCL checker: {kind}: x", f"e{k}"),
        )
        for k, kind in enumerate(kinds)
    ]
    clusters = cluster_failures(pairs)
    assert list(clusters) == ["value_error:others", "a:b", "type_error:simple"]
    assert [e.id for e in clusters["value_error:others"]] == ["e1", "e2"]
    assert cluster_failures(list(reversed(pairs))).keys() == clusters.keys()


# BFCL variants, on the real data, offline.


def cases(category: str) -> dict[str, Case]:
    return {c.id: c for c in load_cases(category)}


def calls(case: Case) -> list[tuple[str, object]]:
    """The ground truth's first accepted value of each parameter, as the model's calls."""
    assert case.answer
    return [
        (name, {p: ok[0] for p, ok in params.items() if ok[0] != ""})
        for call in case.answer
        for name, params in call.items()
    ]


def numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", text)


def test_a_variant_changes_the_request_and_the_ground_truth_alike() -> None:
    case = cases("simple_python")["simple_python_101"]  # 450 meters in 20 seconds
    variant = number_variant(case, random.Random(0), "v")
    assert variant is not None and variant.functions == case.functions
    question = variant.messages[-1]["content"]
    assert variant.answer
    truth = variant.answer[0]["calculate_speed"]
    distance, time = truth["distance"][0], truth["time"][0]
    assert numbers(question) == [str(distance), str(time)]
    assert isinstance(distance, int) and len(str(distance)) == 3 and distance != 450
    assert isinstance(time, int) and len(str(time)) == 2 and time not in (0, 20)
    words = re.sub(r"\d+", "N", question)
    assert words == re.sub(r"\d+", "N", case.messages[-1]["content"])  # only the numbers
    assert score(variant, calls(variant)).valid
    wrong = score(variant, calls(case))  # the original values
    assert not wrong.valid and wrong.error_type == "value_error:others"


def test_variants_pass_the_checker_on_every_kind_of_case() -> None:
    """Floats keep their decimals, parallel calls change together, the original values
    never pass."""
    checked = 0
    for category in ("simple_python", "multiple", "parallel", "parallel_multiple"):
        for case in list(cases(category).values())[100:160]:
            variant = number_variant(case, random.Random(case.id), f"{case.id}~v0")
            if variant is None or not score(case, calls(case)).valid:
                continue
            assert score(variant, calls(variant)).valid, case.id
            assert not score(variant, calls(case)).valid, case.id
            checked += 1
    assert checked > 100


def test_a_float_keeps_its_decimals() -> None:
    case = cases("multiple")["multiple_102"]  # initial velocity 10, 9.8, 5 seconds
    variant = number_variant(case, random.Random(3), "v")
    assert variant is not None and variant.answer
    acceleration = variant.answer[0]["calculate_displacement"]["acceleration"][0]
    assert isinstance(acceleration, float) and acceleration != 9.8
    assert re.search(rf"(?<![\d.]){acceleration:.1f}(?!\d)", variant.messages[-1]["content"])


def make_case(question: str, answer: dict[str, list[object]], **types: str) -> Case:
    return Case(
        id="t",
        category="simple_python",
        messages=[{"role": "user", "content": question}],
        functions=[
            {
                "name": "f",
                "parameters": {
                    "type": "dict",
                    "properties": {p: {"type": t} for p, t in types.items()},
                    "required": list(types),
                },
            }
        ],
        answer=[{"f": answer}],
    )


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("The GCD of 12 and 12.", {"a": [12], "b": [12]}),  # written twice
        ("Roots of 3x^2 + 2x - 4.", {"coefficients": [[3, 2, -4]]}),  # inside a list
        ("Mean 0 and nothing else.", {"mu": [0]}),  # zero
        ("Open room 12-14.", {"room": [12]}),  # part of a range
        ("Play 'Maroon 5' for a while.", {"artist": ["Maroon 5"], "minutes": [5]}),  # a name
        ("Pick 2 of a, b, c.", {"count": [2]}),  # an enumerated choice (see below)
        ("What is the name of the Moon?", {"body": ["Moon"]}),  # no number
    ],
)
def test_nothing_unsafe_is_substituted(question: str, answer: dict[str, list[object]]) -> None:
    case = make_case(question, answer)
    case.functions[0]["parameters"]["properties"]["count"] = {"type": "integer", "enum": [1, 2]}
    assert number_variant(case, random.Random(0), "v") is None


def test_each_accepted_value_keeps_its_type() -> None:
    case = make_case("Round to precision 2 please.", {"p": [2, 2.0, True, ""]})
    variant = number_variant(case, random.Random(0), "v")
    assert variant is not None and variant.answer
    new, as_float, flag, empty = variant.answer[0]["f"]["p"]
    assert isinstance(new, int) and new != 2 and as_float == float(new)
    assert isinstance(as_float, float) and flag is True and empty == ""
    assert variant.messages[0]["content"] == f"Round to precision {new} please."


def test_a_percentage_is_not_the_number_it_shares_digits_with() -> None:
    """4% is the rate 0.04; the 4 of "quarterly" must not change with it."""
    case = make_case(
        "Invest $5000 compounded quarterly at 4% a year.",
        {"principal": [5000], "rate": [0.04], "n": [4]},
    )
    variant = number_variant(case, random.Random(0), "v")
    assert variant is not None and variant.answer
    assert variant.answer[0]["f"]["n"] == [4] and variant.answer[0]["f"]["rate"] == [0.04]
    assert "4%" in variant.messages[0]["content"]
    assert variant.answer[0]["f"]["principal"] != [5000]


def bench(tmp_path: Path, reply: FunctionModel | None = None) -> BfclBench:
    model = reply or FunctionModel(lambda m, t: json.dumps({"answer": "none"}))
    return BfclBench("simple_python", model, TraceStore(tmp_path / "t.db"), train=4, dev=2)


def test_bfcl_variants_are_deterministic_and_named_after_their_case(tmp_path: Path) -> None:
    made = bench(tmp_path)
    assert isinstance(made, MakesVariants)
    speed = made.examples("train")[1]  # simple_python_101
    first = made.variants(speed, 3, seed=0)
    assert [e.id for e in first][:1] == ["simple_python_101~v0-s0"]
    assert len({e.task for e in first}) == len(first) >= 2
    assert made.variants(speed, 1, seed=0) == first[:1]  # variant k whatever n
    assert made.variants(speed, 3, seed=1) != first
    moon = made.examples("train")[2]  # simple_python_102: Earth to Moon, no number
    assert made.variants(moon, 3, seed=0) == []
    again = made.variants(first[0], 1, seed=0)  # a variant of a variant is training data
    assert again and again[0].id.startswith("simple_python_101~v0-s0~v0")


def test_no_variants_of_dev_or_test_cases(tmp_path: Path) -> None:
    made = bench(tmp_path)
    for split in ("test", "dev"):
        with pytest.raises(UserError, match=f"it is a {split} case"):
            made.variants(made.examples(split)[0], 2, seed=0)
    with pytest.raises(UserError, match="not a training case"):
        made.variants(Example(id="simple_python_9999", task="?"), 2, seed=0)


def test_a_variant_is_evaluated_by_the_bench_through_the_loop(tmp_path: Path) -> None:
    """The registered variant runs through the real Loop and BFCL's checker: a model
    that reads the numbers off the request is right, one that copies the original
    case's numbers is wrong with a value error (the data step's signature)."""
    copy_original = [False]

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        request = next(m.content for m in messages if m.role == "user")
        distance, time = (450, 20) if copy_original[0] else map(int, numbers(request))
        arguments = {"distance": distance, "time": time, "to_unit": "km/h"}
        return json.dumps({"name": "calculate_speed", "arguments": arguments})

    made = bench(tmp_path, FunctionModel(reply))
    variant = made.variants(made.examples("train")[1], 1, seed=0)[0]
    right = asyncio.run(made.evaluate(LoopConfig(), variant))
    assert right.score == 1.0 and right.demo and right.demo.task == variant.task
    copy_original[0] = True
    wrong = asyncio.run(made.evaluate(LoopConfig(), variant))
    assert wrong.score == 0.0 and signature(wrong) == "value_error:others"


# The optimizer's data step, on a bench whose scores follow rules.


class FailBench:
    """Training examples are all wrong (no demonstration to bootstrap); dev examples
    are right with demonstrations. Failures are of two kinds, by k % 3."""

    name = "fail"

    def __init__(self) -> None:
        self.runs: list[str] = []
        self._examples = {
            s: [Example(id=f"{s}-{k}", task=f"task {s} {k}") for k in range(6)]
            for s in ("train", "dev", "test")
        }

    def examples(self, split: Split) -> list[Example]:
        return self._examples[split]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        self.runs.append(example.id)
        k = int(example.id.split("~")[0].rsplit("-", 1)[1])
        variant = int(example.id.split("~v")[1]) if "~v" in example.id else None
        right = (variant == 0) if example.id.startswith("train") else bool(config.demos)
        kind = "value_error:others" if k % 3 else "type_error:simple"
        demo = Demo(task=example.task, calls=[DemoCall(name="f", arguments={"k": k})])
        return Outcome(
            example_id=example.id,
            score=float(right),
            critique="" if right else f"BFCL checker: {kind}: wrong k={k}",
            model_calls=1,
            demo=demo if right else None,
        )

    def tools(self) -> list[ToolSpec]:
        return []

    def knobs(self) -> list[dict[str, object]]:
        return []


class VariantBench(FailBench):
    """Makes 3 variants of each training example; variant 0 of each is right."""

    def variants(self, example: Example, n: int, seed: int) -> list[Example]:
        return [
            Example(id=f"{example.id}~v{v}", task=f"{example.task} variant {v}")
            for v in range(min(n, 3))
        ]


def test_the_data_step_trains_the_next_steps_on_cases_like_the_failures(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    made = VariantBench()
    evaluator = Evaluator(made, tmp_path / "evals.jsonl")
    optimizer = Optimizer(
        made,
        evaluator,
        FunctionModel(lambda m, t: ""),
        steps=["data", "demos"],
        per_cluster=3,
        log=lines.append,
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert result.demos and all(" variant 0" in d.task for d in result.demos)
    provenance = result.provenance or {}
    assert provenance["train"] == [e.id for e in made.examples("train")]  # the bench's
    assert [c["step"] for c in provenance["changes"]] == ["demos"]
    data = provenance["data"]
    assert data["clusters"] == [
        {"signature": "value_error:others", "failures": 4, "generated": 3, "failed": 0},
        {"signature": "type_error:simple", "failures": 2, "generated": 3, "failed": 1},
    ]
    # spread over the cluster's examples: first variants first
    assert data["generated"][:3] == ["train-1~v0", "train-2~v0", "train-4~v0"]
    assert data["generated"][3:] == ["train-0~v0", "train-3~v0", "train-0~v1"]
    assert made.runs.count("train-1~v0") == 1  # the re-probe is remembered for demos
    assert "[data] type_error:simple: 2 failures in training; 3 new cases, 1 of them failed" in (
        lines
    )
    assert "[data] training on 12 examples (was 6)" in lines


def test_without_the_data_step_nothing_is_generated(tmp_path: Path) -> None:
    made = VariantBench()
    evaluator = Evaluator(made, tmp_path / "evals.jsonl")
    optimizer = Optimizer(made, evaluator, FunctionModel(lambda m, t: ""), steps=["demos"])
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert not result.demos and "data" not in (result.provenance or {})
    assert not any("~v" in run for run in made.runs)


def test_the_data_step_is_skipped_for_a_bench_that_makes_no_cases(tmp_path: Path) -> None:
    lines: list[str] = []
    made = FailBench()
    assert not isinstance(made, MakesVariants)
    evaluator = Evaluator(made, tmp_path / "evals.jsonl")
    optimizer = Optimizer(
        made, evaluator, FunctionModel(lambda m, t: ""), steps=["data", "demos"], log=lines.append
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert "[data] fail cannot make new cases; skipped" in lines
    assert (result.provenance or {})["data"] == {"skipped": "the bench cannot make new cases"}
    assert not result.demos


def test_evolve_reprobes_the_new_cases_under_the_current_config(tmp_path: Path) -> None:
    made = VariantBench()
    evaluator = Evaluator(made, tmp_path / "evals.jsonl")
    train = made.examples("train")
    evolved = asyncio.run(evolve(made, evaluator, LoopConfig(), train, per_cluster=1, seed=0))
    assert [e.id for e in evolved.train] == [*(e.id for e in train), "train-1~v0", "train-0~v0"]
    assert [(c.signature, c.generated, c.failed) for c in evolved.clusters] == [
        ("value_error:others", ["train-1~v0"], 0),
        ("type_error:simple", ["train-0~v0"], 0),
    ]


def test_data_is_opt_in_and_refused_with_workers(tmp_path: Path) -> None:
    from bigloop_eval_cli.optimize import _checked

    assert STEPS == ("policies", "demos", "instructions", "tool_docs")
    assert set(ALL_STEPS) == {*STEPS, "data", "finetune", "prefer", "tools", "workflow"}
    out = tmp_path / "o.json"
    assert _checked("tasks", None, out, None) == list(STEPS)
    assert _checked("tasks", None, out, ["data", "demos"]) == ["data", "demos"]
    with pytest.raises(UserError, match="Unknown step"):
        _checked("tasks", None, out, ["datum"])

    async def runner(config: LoopConfig, examples: list[Example]) -> list[Outcome]:
        raise AssertionError("never run")

    made = VariantBench()
    evaluator = Evaluator(made, tmp_path / "evals.jsonl", runner=runner)
    with pytest.raises(UserError, match="--ray"):
        Optimizer(made, evaluator, FunctionModel(lambda m, t: ""), steps=["data"])
