"""The optimizer's steps on a bench whose scores follow the config by rule (fast), and
on BFCL through the real Loop and BFCL's checker with a scripted model (plumbing)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from bigloop_eval.benches import BfclBench
from bigloop_eval.bfcl_data import load_cases

from bigloop import FunctionModel, Message, ToolSpec, UserError
from bigloop.config import Demo, DemoCall, LoopConfig
from bigloop.optimize import demos, search
from bigloop.optimize.bench import Example, Outcome, Split
from bigloop.optimize.diff import config_diff
from bigloop.optimize.evaluate import Evaluator, Scores
from bigloop.optimize.instructions import Candidate, ParetoPool
from bigloop.optimize.optimizer import Optimizer
from bigloop.trace.store import TraceStore


class RuleBench:
    """Example k is right when k is even, or the config has demos, or its instructions
    say "RULE"; turning "more_calls" off makes runs faster but loses example 0."""

    name = "rule"

    def __init__(self) -> None:
        self.runs = 0
        self._examples = {
            s: [Example(id=f"{s}-{k}", task=f"task {s} {k}") for k in range(8)]
            for s in ("train", "dev", "test")
        }

    def examples(self, split: Split) -> list[Example]:
        return self._examples[split]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        self.runs += 1
        k = int(example.id.rsplit("-", 1)[1])
        right = k % 2 == 0 or bool(config.demos) or "RULE" in (config.system or "")
        fast = "more_calls" in config.off
        if fast and k == 0:
            right = False
        demo = Demo(task=example.task, calls=[DemoCall(name="f", arguments={"k": k})])
        return Outcome(
            example_id=example.id,
            score=float(right),
            critique="" if right else f"wrong value for k={k}",
            seconds=1.0 if fast else 2.0,
            model_calls=1,
            demo=demo if right else None,
        )

    def tools(self) -> list[ToolSpec]:
        return []

    def knobs(self) -> list[dict[str, object]]:
        return [{"off": ["more_calls"]}]


def reflector(text: str) -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        assert "What went wrong: wrong value" in messages[-1].content  # the critiques
        return json.dumps({"rules": [text]})

    return FunctionModel(reply)


def test_demonstrations_are_bootstrapped_from_successful_training_runs(tmp_path: Path) -> None:
    bench = RuleBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(bench, evaluator, reflector("unused"), steps=["demos"])
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert result.demos and all(d.task.startswith("task train") for d in result.demos)
    assert all(int(d.task.split()[-1]) % 2 == 0 for d in result.demos)  # only right runs
    provenance = result.provenance or {}
    assert (provenance["dev_before"], provenance["dev_after"]) == (0.5, 1.0)
    assert [c["step"] for c in provenance["changes"]] == ["demos"]
    assert provenance["dev"] == [e.id for e in bench.examples("dev")]
    assert provenance["cost"]["model_calls"] == bench.runs


def test_instructions_come_from_reflection_on_critiques_and_are_kept_when_dev_rises(
    tmp_path: Path,
) -> None:
    bench = RuleBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(
        bench,
        evaluator,
        reflector("RULE: take each value from the request."),
        steps=["instructions"],
        iterations=2,
    )
    result = asyncio.run(optimizer.run(LoopConfig(system="Be brief.")))
    assert result.system == "Rules:\n- RULE: take each value from the request."
    assert optimizer.reflections >= 1


def test_a_rule_that_echoes_a_request_is_not_a_proposal() -> None:
    from bigloop.optimize.instructions import propose, reflection_prompt

    failure = (
        Example(id="a", task="Find the area of a circle of radius 5 meters."),
        Outcome(example_id="a", score=0.0, critique="wrong unit"),
    )
    prompt = reflection_prompt(None, [failure])
    echo = FunctionModel(
        lambda m, t: json.dumps({"rules": ["Find the area of a circle of radius 5."]})
    )
    assert asyncio.run(propose(echo, prompt)) is None
    told = "Do not answer the requests. Write up to five short general rules for the assistant"
    parrot = FunctionModel(lambda m, t: json.dumps({"rules": [told]}))
    assert asyncio.run(propose(parrot, prompt)) is None  # seen on a real run (BFCL multiple)
    rule = FunctionModel(lambda m, t: json.dumps({"rules": ["Write units as full words."] * 2}))
    assert asyncio.run(propose(rule, prompt)) == "Rules:\n- Write units as full words."


def test_a_useless_proposal_is_not_kept(tmp_path: Path) -> None:
    bench = RuleBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(
        bench,
        evaluator,
        reflector("Think about the request carefully."),
        steps=["instructions"],
        iterations=2,
    )
    result = asyncio.run(optimizer.run(LoopConfig(system="Be brief.")))
    assert result.system == "Be brief."
    assert (result.provenance or {})["changes"] == []


def test_policy_search_reports_a_pareto_front_and_keeps_accuracy_first(tmp_path: Path) -> None:
    bench = RuleBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(bench, evaluator, reflector("unused"), steps=["policies"])
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert result.off == []  # faster but less accurate: not kept
    front = (result.provenance or {})["policy_front"]
    assert [f["label"] for f in front] == ["base", "off=['more_calls']"]


def test_a_rerun_resumes_from_the_remembered_evaluations_and_proposals(tmp_path: Path) -> None:
    first_bench, again = RuleBench(), RuleBench()
    for bench in (first_bench, again):
        evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
        optimizer = Optimizer(
            bench,
            evaluator,
            reflector("RULE one."),
            iterations=2,
            memo=tmp_path / "proposals.jsonl",
        )
        result = asyncio.run(optimizer.run(LoopConfig()))
    assert first_bench.runs > 0 and again.runs == 0
    assert optimizer.reflections == 0
    assert result.demos  # the same result, from memory


def test_successive_halving_gives_all_of_dev_only_to_the_better_half(tmp_path: Path) -> None:
    bench = RuleBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    dev = bench.examples("dev")
    pool = [
        ("base", LoopConfig()),
        ("demos", LoopConfig(demos=[Demo(task="t", answer="a")])),
        ("rule", LoopConfig(system="RULE")),
        ("fast", LoopConfig(off=["more_calls"])),
    ]
    trials = asyncio.run(search.successive_halving(evaluator, pool, dev, first=4))
    full = {t.label for t in trials if len(t.scores.outcomes) == len(dev)}
    assert full == {"demos", "rule"}
    assert search.pareto_front(trials)[0].label == "demos"  # tie: the earlier one


def test_the_pareto_pool_keeps_candidates_that_win_on_different_examples() -> None:
    def scores(right: list[int]) -> Scores:
        return Scores(
            outcomes={str(k): Outcome(example_id=str(k), score=float(k in right)) for k in range(4)}
        )

    pool = ParetoPool()
    pool.add(Candidate(instructions="a", scores=scores([0, 1])))
    pool.add(Candidate(instructions="b", scores=scores([2])))
    pool.add(Candidate(instructions="c", scores=scores([0])))  # dominated by a
    assert pool.wins() == [2, 1, 1]
    assert [c.instructions for c in pool.front()] == ["a", "b", "c"]
    assert pool.best().instructions == "a"
    picks = {pool.pick(random.Random(s)).instructions for s in range(30)}
    assert picks == {"a", "b", "c"}


def test_demo_sets_show_different_tools() -> None:
    pool = [
        Demo(task=f"t{k}", calls=[DemoCall(name="f" if k < 3 else "g", arguments={})])
        for k in range(6)
    ]
    for chosen in demos.demo_sets(pool, sizes=(2,), per_size=3, seed=1):
        assert {c.name for d in chosen for c in d.calls} == {"f", "g"}
    long = Demo(task="x" * 500, answer="y")
    assert demos.demo_pool([long, None, pool[0], pool[0], pool[1]]) == pool[:2]


def test_the_demo_size_limit_is_relative_to_the_benchs_own_successful_runs() -> None:
    def demo(n: int) -> Demo:
        return Demo(task=f"{n:03d}" + "x" * (n - 3), answer="")

    several_calls = [demo(n) for n in (450, 500, 520, 600, 900)]
    assert demos.demo_pool(several_calls) == several_calls  # all under 2 x 520
    with_an_outlier = [demo(n) for n in (100, 120, 150, 160, 500)]
    assert demos.demo_pool(with_an_outlier) == with_an_outlier[:4]  # 500 > 2 x 150
    assert demos.demo_pool([]) == []


def test_diff_names_each_change_and_the_recorded_gain() -> None:
    a = LoopConfig()
    b = LoopConfig(
        system="RULE",
        off=["more_calls"],
        demos=[Demo(task="What is 2+2?", calls=[DemoCall(name="calculator", arguments={})])],
        tool_docs={"calculator": "Evaluates an expression."},
        provenance={"changes": [{"step": "demos", "dev_before": 0.5, "dev_after": 0.75}]},
    )
    text = "\n".join(config_diff(a, b))
    assert "~ system: null → RULE" in text
    assert "+ demo: What is 2+2?" in text
    assert "~ doc of calculator: None → 'Evaluates an expression.'" in text
    assert "demos: dev 50% → 75%" in text
    assert config_diff(a, a) == []


def test_bfcl_bench_reads_feedback_from_the_trace(tmp_path: Path) -> None:
    """Through the real Loop and BFCL's checker: a wrong call's critique carries the
    checker's verdict and the loop's refusal; a right run becomes a demonstration."""
    store = TraceStore(tmp_path / "traces.db")
    cases = {c.id: c for c in load_cases("simple_python")}

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        request = next(m.content for m in messages if m.role == "user")
        case = next(c for c in cases.values() if c.messages[-1]["content"] == request)
        name = case.functions[0]["name"]
        truth = case.answer[0][name] if case.answer else {}
        if case.id.endswith("1"):  # a wrong value (and an unknown argument first)
            if len([m for m in messages if m.role == "assistant"]) == 0:
                return json.dumps({"name": name, "arguments": {"nonsense": 1}})
            return json.dumps({"name": name, "arguments": {k: "wrong" for k in truth}})
        args = {k: v[0] for k, v in truth.items() if v and v[0] != ""}
        return json.dumps({"name": name, "arguments": args})

    bench = BfclBench("simple_python", FunctionModel(reply), store, train=2, dev=2)
    assert [e.id for e in bench.examples("train")] == ["simple_python_100", "simple_python_101"]
    assert [e.id for e in bench.examples("dev")] == ["simple_python_102", "simple_python_103"]
    right, wrong = (asyncio.run(bench.evaluate(LoopConfig(), e)) for e in bench.examples("train"))
    assert right.score == 1.0 and right.demo is not None and right.demo.calls
    assert right.critique == "" and right.run_id and store.steps(right.run_id)
    assert wrong.score == 0.0 and wrong.demo is None
    assert "BFCL checker:" in wrong.critique and "nonsense" in wrong.critique
    assert wrong.mistakes and wrong.mistakes[0].error.startswith("invalid_arguments")


def test_bfcl_bench_refuses_splits_the_category_cannot_hold(tmp_path: Path) -> None:
    from bigloop import UserError

    with pytest.raises(UserError, match="Ask for at most 300 together"):
        BfclBench(
            "simple_python",
            FunctionModel(lambda m, t: ""),
            TraceStore(tmp_path / "t.db"),
            train=250,
            dev=250,
        )


def test_the_optimized_config_reaches_the_model(tmp_path: Path) -> None:
    """Demonstrations and instructions are in the system prompt the model gets, tool docs
    replace the tool's description, in a loop built from the config file."""
    from bigloop_eval.suite.run import build_loop

    from bigloop import Loop

    seen: list[Any] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append((messages, tools))
        return json.dumps({"answer": "4"})

    config = LoopConfig(
        system="RULE",
        demos=[
            Demo(
                task="What is 3+3?",
                calls=[DemoCall(name="calculator", arguments={"expression": "3+3"})],
            )
        ],
        tool_docs={"calculator": "Adds and multiplies."},
    )
    path = tmp_path / "loop.json"
    config.save(path)
    from bigloop.atoms import builtin

    loop: Loop = build_loop(FunctionModel(reply), builtin.default_tools(), LoopConfig.load(path))
    asyncio.run(loop.run("What is 2+2?"))
    messages, tools = seen[0]
    system = messages[0].content
    assert messages[0].role == "system" and system.startswith("RULE")
    assert 'Request: What is 3+3?\nReply: {"tool_calls": [{"name": "calculator"' in system
    assert next(t for t in tools if t.name == "calculator").description == "Adds and multiplies."


def test_a_model_that_never_replies_is_an_error_not_a_score(tmp_path: Path) -> None:
    from bigloop import ModelUnavailable, UserError

    def down(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise ModelUnavailable("connection refused")

    bench = BfclBench(
        "simple_python", FunctionModel(down), TraceStore(tmp_path / "t.db"), train=1, dev=1
    )
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    with pytest.raises(UserError, match="connection refused"):
        asyncio.run(evaluator.score(LoopConfig(), bench.examples("dev")))
    assert not (tmp_path / "evals.jsonl").exists()  # nothing remembered


def test_a_model_that_repeats_a_malformed_reply_scores_zero(tmp_path: Path) -> None:
    """Seen on BFCL live_simple: the run fails (the same unparsable reply after its
    correction), but the model did reply, so the example is a 0, not a broken model."""
    bench = BfclBench(
        "simple_python",
        FunctionModel(lambda m, t: '{"tool_calls": [{"name": '),
        TraceStore(tmp_path / "t.db"),
        train=1,
        dev=1,
    )
    outcome = asyncio.run(bench.evaluate(LoopConfig(), bench.examples("dev")[0]))
    assert outcome.score == 0.0 and "same malformed reply" in outcome.critique


def test_a_line_cut_short_by_a_kill_does_not_swallow_the_next(tmp_path: Path) -> None:
    from bigloop.optimize.evaluate import append_line

    path = tmp_path / "evals.jsonl"
    path.write_text('{"config": "a", "exa')  # an interrupted write
    append_line(path, '{"ok": 1}')
    assert path.read_text().splitlines()[-1] == '{"ok": 1}'


def test_diff_shows_a_changed_demonstration() -> None:
    a = LoopConfig(demos=[Demo(task="t", answer="1")])
    b = LoopConfig(demos=[Demo(task="t", answer="2")])
    assert any(line.startswith("~ demo: t:") for line in config_diff(a, b))


def test_the_loops_system_prompt_is_merged_with_a_historys_own() -> None:
    from bigloop import Loop

    seen: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(list(messages))
        return json.dumps({"answer": "ok"})

    loop = Loop(FunctionModel(reply), system="RULES")
    history = [Message(role="system", content="You are a bank's assistant.")]
    asyncio.run(loop.run("hello", history=history))
    systems = [m for m in seen[0] if m.role == "system"]
    assert [m.content for m in systems] == ["RULES\n\nYou are a bank's assistant."]


def test_optimize_keeps_the_model_of_a_config_base(tmp_path: Path) -> None:
    """`--config` names a server: without --model, the base keeps it (the server is not
    reachable here, so the command fails naming it — not the embedded model)."""
    from typer.testing import CliRunner

    from bigloop.cli import app

    base = tmp_path / "base.json"
    LoopConfig(model="m", base_url="http://127.0.0.1:9/v1").save(base)
    result = CliRunner().invoke(
        app,
        [
            "optimize",
            "--bench",
            "bfcl",
            "-c",
            "simple_python",
            "--train",
            "1",
            "--dev",
            "1",
            "--config",
            str(base),
            "-o",
            str(tmp_path / "o.json"),
            "--step",
            "policies",
        ],
    )
    assert isinstance(result.exception, UserError) or result.exit_code != 0
    assert "127.0.0.1:9" in str(result.exception) + result.output


def test_optimize_explains_a_missing_bench() -> None:
    from typer.testing import CliRunner

    from bigloop.cli import app

    result = CliRunner().invoke(app, ["optimize", "-o", "x.json"])
    assert "Pass --bench bfcl" in str(result.exception)


def test_optimize_refuses_generated_tasks_on_bfcl() -> None:
    from typer.testing import CliRunner

    from bigloop.cli import app

    result = CliRunner().invoke(
        app, ["optimize", "--bench", "bfcl", "-c", "simple_python", "--generate", "3", "-o", "x"]
    )
    assert "--generate makes suite tasks" in str(result.exception)


class DocBench(RuleBench):
    """Examples are right only when the tool's description says how to write dates."""

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        from bigloop.optimize.bench import Mistake

        self.runs += 1
        right = "YYYY-MM-DD" in config.tool_docs.get("add_days", "")
        wrong = Mistake(
            tool="add_days", arguments={"date": "May 3"}, error="invalid_arguments: date"
        )
        return Outcome(
            example_id=example.id,
            score=float(right),
            critique="" if right else "invalid date",
            model_calls=1,
            mistakes=[] if right else [wrong],
        )

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec(name="add_days", description="Adds days.", parameters={"type": "object"})]


def test_tool_docs_are_rewritten_from_the_mistakes_made_calling_the_tool(tmp_path: Path) -> None:
    prompts: list[str] = []

    def rewrite(messages: list[Message], tools: list[ToolSpec]) -> str:
        prompts.append(messages[-1].content)
        return json.dumps({"description": "Adds days to a date written YYYY-MM-DD."})

    bench = DocBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(bench, evaluator, FunctionModel(rewrite), steps=["tool_docs"])
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert result.tool_docs == {"add_days": "Adds days to a date written YYYY-MM-DD."}
    assert '{"date": "May 3"} -> invalid_arguments: date' in prompts[0]
    assert (result.provenance or {})["dev_after"] == 1.0


def test_merge_joins_the_rules_of_two_candidates_once_each() -> None:
    from bigloop.optimize.instructions import merge, rules_of

    a = "Rules:\n- Keep units.\n- Use the request's numbers."
    b = "Rules:\n- Use the request's numbers.\n- Leave optional flags out."
    assert merge(a, b) == (
        "Rules:\n- Keep units.\n- Use the request's numbers.\n- Leave optional flags out."
    )
    assert merge(a, a) is None  # nothing new
    assert merge("Be brief.", b) is None  # not rules: nothing to join
    many = "Rules:\n" + "\n".join(f"- rule number {k}" for k in range(6))
    other = "Rules:\n" + "\n".join(f"- other rule {k}" for k in range(6))
    merged = merge(many, other, limit=4) or ""
    assert rules_of(merged) == ["rule number 0", "other rule 0", "rule number 1", "other rule 1"]


def test_the_pool_pairs_candidates_that_are_right_on_different_examples() -> None:
    def scores(right: list[int]) -> Scores:
        return Scores(
            outcomes={str(k): Outcome(example_id=str(k), score=float(k in right)) for k in range(5)}
        )

    pool = ParetoPool()
    pool.add(Candidate(instructions=None, scores=scores([0, 1, 2])))  # base: no rules
    pool.add(Candidate(instructions="Rules:\n- a rule here", scores=scores([0, 1])))
    pool.add(Candidate(instructions="Rules:\n- b rule here", scores=scores([2, 3])))
    pool.add(Candidate(instructions="Rules:\n- c rule here", scores=scores([3])))  # inside b
    pair = pool.pair()
    assert pair is not None
    assert {pair[0].instructions, pair[1].instructions} == {
        "Rules:\n- a rule here",
        "Rules:\n- b rule here",
    }
    lone = ParetoPool()
    lone.add(Candidate(instructions="Rules:\n- a rule here", scores=scores([0, 1])))
    lone.add(Candidate(instructions="Rules:\n- b rule here", scores=scores([0])))
    assert lone.pair() is None


class HalfRuleBench(RuleBench):
    """Example k is right when it is even, or k < 4 and the instructions say "LOW", or
    k >= 4 and they say "HIGH": only a merge of the two rules gets all of them."""

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        self.runs += 1
        k = int(example.id.rsplit("-", 1)[1])
        text = config.system or ""
        right = k % 2 == 0 or ("LOW" in text and k < 4) or ("HIGH" in text and k >= 4)
        return Outcome(
            example_id=example.id,
            score=float(right),
            critique="" if right else f"wrong value for k={k}",
            seconds=1.0,
            model_calls=1,
        )


def test_the_optimizer_merges_two_complementary_proposals_when_dev_rises(
    tmp_path: Path,
) -> None:
    proposals = iter(["LOW numbers rule", "HIGH numbers rule"] * 4)

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        return json.dumps({"rules": [next(proposals)]})

    bench = HalfRuleBench()
    optimizer = Optimizer(
        bench,
        Evaluator(bench, tmp_path / "evals.jsonl"),
        FunctionModel(reply),
        steps=["instructions"],
        iterations=2,
        minibatch=8,
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert result.system == "Rules:\n- LOW numbers rule\n- HIGH numbers rule"


def test_a_strong_model_is_a_knob_of_the_policy_search(tmp_path: Path) -> None:
    from bigloop_eval.benches import build_bench

    from bigloop.routing.cascade import CascadeModel

    strong = tmp_path / "strong.gguf"
    strong.write_bytes(b"")  # nothing loads until a chat
    cheap = FunctionModel(lambda m, t: "{}")
    spec = {"bench": "bfcl", "category": "simple_python", "train": 2, "dev": 2, "test": 1}
    bench = build_bench({**spec, "strong": str(strong)}, cheap, TraceStore(tmp_path / "t.db"))
    assert bench.knobs()[-1] == {"escalate": str(strong)}
    assert bench.model_for(LoopConfig()) is cheap
    cascade = bench.model_for(LoopConfig(escalate=str(strong)))
    assert isinstance(cascade, CascadeModel) and cascade.cheap is cheap
    assert bench.model_for(LoopConfig(escalate=str(strong))) is cascade  # built once
    plain = build_bench(spec, cheap, TraceStore(tmp_path / "u.db"))
    assert not any("escalate" in k for k in plain.knobs())


def test_configs_without_escalate_keep_the_fingerprints_of_earlier_runs() -> None:
    from bigloop.optimize.evaluate import fingerprint

    # committed evaluations (bench/results/optimize/*.work) are found by this key; a
    # field added to LoopConfig must leave it alone while unset (the defaults of then:
    # clarify="ungrounded"; a changed default is a changed behaviour, and a new key)
    assert fingerprint(LoopConfig(clarify="ungrounded")) == "984df881e6017948"
    assert fingerprint(LoopConfig(clarify="ungrounded", tool_fits=True)) != "984df881e6017948"
    assert fingerprint(LoopConfig(escalate="coder-1.5b")) != fingerprint(LoopConfig())
    unsure = LoopConfig(escalate="coder-1.5b", escalate_when="unsure")
    assert fingerprint(unsure) != fingerprint(LoopConfig(escalate="coder-1.5b"))


class AdapterBench(RuleBench):
    """Dev rises with an adapter (every example right); `elsewhere` examples — a source
    the training never saw — are right without one and wrong with it."""

    name = "adapter"

    def __init__(self, *, harmful: bool) -> None:
        super().__init__()
        self.harmful = harmful

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        if example.id.startswith("elsewhere"):
            right = not (self.harmful and config.adapter)
            return Outcome(example_id=example.id, score=float(right), seconds=1.0)
        if config.adapter:
            return Outcome(example_id=example.id, score=1.0, seconds=1.0)
        return await super().evaluate(config, example)


@pytest.mark.parametrize("harmful", [False, True])
def test_a_tuned_model_is_kept_only_when_it_loses_nothing_it_never_trained_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, harmful: bool
) -> None:
    """Plumbing of the do-no-harm gate (`Tuning.harm`): the finetune step's candidate
    beats dev either way; it is kept only when the never-trained source does not drop."""
    from bigloop.optimize.harm import HarmSource
    from bigloop.optimize.optimizer import Proposal, Tuning

    bench = AdapterBench(harmful=harmful)
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    elsewhere = [Example(id=f"elsewhere-{k}", task="t") for k in range(4)]
    source = HarmSource(
        name="other", evaluator=Evaluator(bench, tmp_path / "h.jsonl"), examples=elsewhere
    )
    tuning = Tuning(base_gguf=tmp_path / "m.gguf", folder=tmp_path, harm=[source])
    optimizer = Optimizer(bench, evaluator, reflector("-"), steps=["finetune"], tuning=tuning)

    async def tuned(current: LoopConfig, train: object, dev: list[Example]) -> Proposal:
        config = current.model_copy(update={"adapter": str(tmp_path / "a.gguf")})
        return Proposal(config=config, scores=await evaluator.score(config, dev), what="lora")

    monkeypatch.setattr(optimizer, "_finetune", tuned)
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert (result.adapter is not None) is not harmful
    checks = (result.provenance or {})["do_no_harm"][0]["checks"]
    assert checks == [{"source": "other", "n": 4, "before": 4, "after": 0 if harmful else 4}]
