"""The benches `bigloop optimize` improves a loop on (`bigloop.optimize.bench.Bench`):
a BFCL category and the everyday-task suite, each split into disjoint train, dev and
test examples, each example run through the loop with its trace stored and read back
for the feedback (`bigloop.optimize.feedback`).

Splits (the same for every optimizer and for the DSPy comparison in `bench/`):
- BFCL: the category file's cases in order; test = the first `test` (100: the cases
  `bigloop eval bfcl -n 100` reports), train = the next `train` after case 100, dev = the
  `dev` after those.
- The task suite: test = its test split (never tuned on); its dev split is divided, per
  category in suite order, alternately into train and dev.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel, ToolSpec
from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example, Outcome, Split
from bigloop.optimize.feedback import critique, demo_from, mistakes
from bigloop.optimize.finetune.turns import Pair, Turn
from bigloop.trace.records import RunResult, Step
from bigloop.trace.store import TraceStore
from bigloop_eval.bfcl_data import Case, load_cases
from bigloop_eval.bfcl_score import score
from bigloop_eval.bfcl_single import loop_run, made_calls
from bigloop_eval.bfcl_teach import bfcl_test_requests, never_trained_requests, teach
from bigloop_eval.bfcl_variants import number_variant
from bigloop_eval.suite import CATEGORIES, Task, Toolbox, Workspace, split
from bigloop_eval.suite.checks import Outcome as SuiteOutcome
from bigloop_eval.suite.run import build_loop

TEST_BLOCK = 100
"""BFCL cases before this index are test cases whatever `test` is: train and dev start
after it, so a test split of up to 100 never overlaps them."""

BFCL_KNOBS: list[dict[str, object]] = [
    {"off": ["more_calls"]},
    {"off": ["drop_invented_optionals"]},
    {"off": ["coerce_types"]},
    {"off": ["reject_copied_examples"]},
    {"off": ["relevance_gate"]},
    {"off": ["rank_tools"]},
]
SUITE_KNOBS: list[dict[str, object]] = [
    {"planner": "react"},
    {"clarify": "missing"},
    {"off": ["more_calls"]},
    {"off": ["check_answers"]},
    {"off": ["honour_precision"]},
    {"off": ["ask_after_refusal"]},
    {"off": ["settle"]},
]


class _Models:
    """The model a config runs: the bench's own, or — when the config sets `escalate` —
    a cascade from it to that stronger model (built once per name). With `strong` set,
    escalating to it is one more knob of the policy search."""

    def __init__(self, model: ChatModel, strong: str | None) -> None:
        self.model = model
        self.strong = strong
        self._cascades: dict[str, ChatModel] = {}

    def model_for(self, config: LoopConfig) -> ChatModel:
        """The bench's model, with the config's adapter when it has one, escalating to
        its `escalate` model when it names one (each built once)."""
        model = self.model
        if config.adapter is not None:
            if config.adapter not in self._cascades:
                self._cascades[config.adapter] = config.model_copy(
                    update={"escalate": None}
                ).build_model()
            model = self._cascades[config.adapter]
        model = config.voting(model)
        if config.escalate is None:
            return model
        key = (
            f"{config.adapter}>{config.vote}>{config.escalate}"
            f">{config.escalate_when}>{config.escalate_threshold}"
        )
        if key not in self._cascades:
            self._cascades[key] = config.escalating(model)
        return self._cascades[key]

    def _knobs(self, base: list[dict[str, object]]) -> list[dict[str, object]]:
        return base + ([{"escalate": self.strong}] if self.strong else [])


class BfclBench(_Models):
    """Single-turn BFCL categories (`category`: one, or several joined by commas, each
    split alike), scored by BFCL's checker."""

    fixed = ("planner", "clarify")
    """Config fields BFCL's loop mode sets itself (a ReAct turn that stops once its calls
    are made, no clarifying questions): the workflow search leaves them alone. A config
    whose planner is "code" runs BFCL's code mode instead (one program, its calls
    scored)."""

    def __init__(
        self,
        category: str,
        model: ChatModel,
        store: TraceStore,
        *,
        train: int,
        dev: int,
        test: int = TEST_BLOCK,
        strong: str | None = None,
    ) -> None:
        super().__init__(model, strong)
        if test > TEST_BLOCK:
            raise UserError(
                f"--test {test}: the BFCL test split is at most the first {TEST_BLOCK}."
            )
        self.name = f"bfcl:{category}"
        self.store = store
        self._cases: dict[str, Case] = {}
        self._splits: dict[Split, list[Case]] = {"test": [], "train": [], "dev": []}
        for one in category.split(","):
            self._add(one.strip(), train, dev, test)

    def _add(self, category: str, train: int, dev: int, test: int) -> None:
        cases = load_cases(category)
        end = TEST_BLOCK + train + dev
        if len(cases) <= TEST_BLOCK + 2:
            raise UserError(
                f"BFCL {category} has {len(cases)} cases, all in the test block (the first "
                f"{TEST_BLOCK}): nothing is left to train and tune on. Choose a category "
                "with more cases (simple_python, multiple, parallel, live_simple, ...)."
            )
        if end > len(cases):
            room = len(cases) - TEST_BLOCK
            raise UserError(
                f"BFCL {category} has {len(cases)} cases: test takes the first {TEST_BLOCK}, "
                f"train and dev the {room} after; --train {train} + --dev {dev} is more. "
                f"Ask for at most {room} together."
            )
        self._cases.update({c.id: c for c in cases})
        self._splits["test"] += cases[:test]
        self._splits["train"] += cases[TEST_BLOCK : TEST_BLOCK + train]
        self._splits["dev"] += cases[TEST_BLOCK + train : end]

    def examples(self, split: Split) -> list[Example]:
        return [_example(c) for c in self._splits[split]]

    def variants(self, example: Example, n: int, seed: int) -> list[Example]:
        """Up to `n` new cases like a training case, its numbers changed consistently in
        the request and the ground truth (`number_variant`), so BFCL's checker still
        scores them; registered so `evaluate` runs them. Variant k is the same for the
        same seed whatever `n`; duplicates are dropped, and a case with no number that can
        be changed safely gives none.

        Raises:
            UserError: `example` is not a training case (or a variant of one): a variant
                of a dev or test case in training would leak it.
        """
        case = self._trainable(example.id)
        made: dict[str, Example] = {}
        for k in range(n):
            rng = random.Random(f"{seed}:{case.id}:{k}")
            variant = number_variant(case, rng, f"{case.id}~v{k}-s{seed}")
            if variant is None:
                continue
            self._cases[variant.id] = variant
            made.setdefault(json.dumps(variant.answer, sort_keys=True), _example(variant))
        return list(made.values())

    def _trainable(self, example_id: str) -> Case:
        base = example_id.split("~", 1)[0]
        for name, cases in self._splits.items():
            if name != "train" and any(c.id == base for c in cases):
                raise UserError(
                    f"No variants of {example_id}: it is a {name} case, and its variants "
                    "would leak it into training. Ask only for training cases' variants."
                )
        if example_id not in self._cases or all(c.id != base for c in self._splits["train"]):
            raise UserError(f"{example_id} is not a training case of {self.name}.")
        return self._cases[example_id]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        case = self._cases[example.id]
        start = time.perf_counter()
        model = self.model_for(config)
        code = config.planner == "code"  # BFCL's code mode; any other planner: loop mode
        run = await loop_run(case, model, case.tools, 2, config, self.store, code=code)
        seconds = time.perf_counter() - start
        calls = [] if run.status == "failed" else made_calls(run)
        verdict = score(case, calls)
        steps = self.store.steps(run.run_id)
        checker = ""
        if not verdict.valid:
            errors = "; ".join(str(e) for e in (verdict.errors or []))[:300]
            made = json.dumps([[n, a] for n, a in calls], ensure_ascii=False, default=str)[:200]
            checker = f"BFCL checker: {verdict.error_type}: {errors} (calls made: {made})"
        return _outcome(example, run, steps, verdict.valid, checker, seconds)

    def tools(self) -> list[ToolSpec]:
        return []  # each case has its own functions

    def knobs(self) -> list[dict[str, object]]:
        return self._knobs(BFCL_KNOBS)

    async def turns(self, config: LoopConfig, example: Example) -> list[Turn]:
        """The case's ground truth as the model's first turn, recorded through the real
        loop under `config` and kept when BFCL's checker passes the calls the loop made
        (`bfcl_teach`)."""
        return await teach(self._cases[example.id], config)

    def held_out(self) -> list[str]:
        """Every test and dev request of these categories, and every request of the
        categories never trained on (`bfcl_teach.NEVER_TRAINED`)."""
        cases = [*self._splits["test"], *self._splits["dev"]]
        return [_request(c) for c in cases] + never_trained_requests()


class SuiteBench(_Models):
    """The everyday-task suite, each task with its own tools over a generated workspace."""

    def __init__(
        self,
        model: ChatModel,
        store: TraceStore,
        *,
        strong: str | None = None,
        categories: list[str] | None = None,
        generated: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__(model, strong)
        if unknown := sorted(set(categories or ()) - set(CATEGORIES)):
            raise UserError(
                f"Unknown suite categories {unknown}; choose from {', '.join(CATEGORIES)}."
            )
        chosen = [c for c in CATEGORIES if not categories or c in categories]
        self.name = "tasks" if not categories else f"tasks:{','.join(chosen)}"
        self.store = store
        self._tmp = tempfile.TemporaryDirectory(prefix="bigloop-optimize-")
        self.workspace = Workspace.create(Path(self._tmp.name))
        self._tasks = {t.id: t for t in split("all")}
        train: list[Task] = []
        dev: list[Task] = []
        for category in chosen:
            tasks = [t for t in split("dev") if t.category == category]
            train += tasks[0::2]
            dev += tasks[1::2]
        self._workspaces = {t.id: self.workspace for t in self._tasks.values()}
        if generated:
            made = self._generated(generated, seed, chosen)
            train += made
        self._splits: dict[Split, list[Task]] = {
            "train": train,
            "dev": dev,
            "test": [t for t in split("test") if t.category in chosen],
        }

    def _generated(self, per_family: int, seed: int, chosen: Sequence[str]) -> list[Task]:
        """`per_family` generated training tasks of each chosen family, over their own
        training workspace (`suite.generate`)."""
        from bigloop_eval.suite.generate import TrainingData, generate

        data = TrainingData(Path(self._tmp.name) / "training", seed)
        made = [t for t in generate(per_family, seed, data) if t.category in chosen]
        for task in made:
            self._tasks[task.id] = task
            self._workspaces[task.id] = data.workspace
        return made

    def close(self) -> None:
        self._tmp.cleanup()

    def examples(self, split: Split) -> list[Example]:
        return [Example(id=t.id, task=t.text) for t in self._splits[split]]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        task = self._tasks[example.id]
        model = self.model_for(config)
        tools = self._workspaces[task.id].tools(task.tools)
        loop = build_loop(model, tools, config, self.store)
        start = time.perf_counter()
        run = await loop.run(task.text)
        seconds = time.perf_counter() - start
        passed, why = task.check(SuiteOutcome.of(run))
        steps = self.store.steps(run.run_id)
        verdict = "" if passed else f"check: {why} (answer: {str(run.answer)[:200]!r})"
        return _outcome(example, run, steps, passed, verdict, seconds)

    def reference(self, example: Example) -> str | None:
        """The answer the task's reference solution computes with the real tools (None for
        a task that has none: a question to ask, no tool needed)."""
        task = self._tasks[example.id]
        if task.solve is None:
            return None
        return str(task.solve(Toolbox(self._workspaces[task.id])))

    def accepts(self, example: Example, answer: str) -> bool:
        passed, _ = self._tasks[example.id].check(SuiteOutcome(status="ok", answer=answer))
        return passed

    def tools(self) -> list[ToolSpec]:
        names = sorted({n for t in self._splits["train"] for n in t.tools})
        tools = {t.name: t for t in self.workspace.tools(tuple(names))}
        return [
            ToolSpec(name=t.name, description=t.description, parameters=t.schema)
            for t in tools.values()
        ]

    def knobs(self) -> list[dict[str, object]]:
        return self._knobs(SUITE_KNOBS)

    async def turns(self, config: LoopConfig, example: Example) -> list[Turn]:
        """The task's solution (its tool calls, then the answer) recorded through the
        suite's loop under `config`, kept when the task's check passes (`suite_teach`)."""
        from bigloop_eval.suite_teach import teach_task

        task = self._tasks[example.id]
        return await teach_task(task, self._workspaces[task.id], config)

    async def pairs(self, config: LoopConfig, example: Example) -> list[Pair]:
        """The turns of the task's verified run at which the config's own model decides
        otherwise, as preference pairs (`suite_teach.contrast_task`)."""
        from bigloop_eval.suite_teach import contrast_task

        task = self._tasks[example.id]
        rival = self.model_for(config.model_copy(update={"escalate": None}))  # its own model
        return await contrast_task(task, self._workspaces[task.id], config, rival)

    def held_out(self) -> list[str]:
        """Every dev and test request of the suite, and BFCL's test and never-trained
        requests (nothing trained on may copy them)."""
        suite = [t.text for t in [*self._splits["dev"], *split("test")]]
        return suite + bfcl_test_requests() + never_trained_requests()


def build_bench(
    spec: dict[str, Any], model: ChatModel, store: TraceStore
) -> BfclBench | SuiteBench:
    """A bench from its description: {"bench": "bfcl", "category": C, "train": N,
    "dev": N, "test": N} or {"bench": "tasks"} (optionally with "categories": [...], and
    "generated": N training tasks per family from "seed"), either
    with an optional "strong" model name (`_Models.strong`) (how Ray workers rebuild the
    bench)."""
    strong = spec.get("strong")
    if spec["bench"] == "bfcl":
        return BfclBench(
            spec["category"],
            model,
            store,
            train=spec["train"],
            dev=spec["dev"],
            test=spec["test"],
            strong=strong,
        )
    return SuiteBench(
        model,
        store,
        strong=strong,
        categories=spec.get("categories"),
        generated=spec.get("generated", 0),
        seed=spec.get("seed", 0),
    )


def _outcome(
    example: Example, run: RunResult, steps: list[Step], passed: bool, verdict: str, seconds: float
) -> Outcome:
    """The outcome of a run.

    Raises:
        UserError: the run failed before the model replied once (the model is missing,
            unreachable or broken): that is no score of the config, and is not
            remembered. A reply that did not parse is a reply: its run scores 0.
    """
    replied = any(s.kind == "model" and (s.error is None or s.output) for s in steps)
    if run.status == "failed" and not replied:
        raise UserError(f"The model failed on {example.id}, so nothing was scored: {run.error}")
    if run.status != "ok" and run.error:
        verdict = f"{verdict}\nthe run ended {run.status}: {run.error}".strip()
    return Outcome(
        example_id=example.id,
        score=1.0 if passed else 0.0,
        critique="" if passed else critique(verdict, steps),
        seconds=round(seconds, 3),
        model_calls=sum(s.kind == "model" for s in steps),
        tokens=run.usage.prompt_tokens + run.usage.completion_tokens,
        demo=demo_from(example.task, steps, run.answer) if passed else None,
        mistakes=mistakes(steps),
        run_id=run.run_id,
    )


def _example(case: Case) -> Example:
    return Example(id=case.id, task=_request(case))


def _request(case: Case) -> str:
    users = [m["content"] for m in case.messages if m["role"] == "user"]
    return users[-1] if users else ""
