"""The optimizer: a base `LoopConfig` improved step by step on a bench's dev split, each
step a small module with one job — the schedule and policies (`search`), demonstrations
(`demos`), instructions (`instructions`), tool documentation (`tool_docs`) — a change
kept only when it raises the dev score. The opt-in `data` step (`data`) changes no
config: it adds cases like the training failures to the training list the later steps
use. The result is the config with its provenance:
the data, the seed, the base config, every accepted change with its dev gain, the
Pareto front of the policy search, and what optimizing cost.

Evaluations are remembered (`Evaluator`) and so are the reflective proposals, so an
interrupted optimization rerun with the same arguments resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel
from bigloop.config import LoopConfig
from bigloop.optimize import data, demos, instructions, search, tool_docs
from bigloop.optimize.bench import Bench, Example
from bigloop.optimize.evaluate import Evaluator, Scores, append_line, fingerprint
from bigloop.optimize.finetune.train import LoraSettings
from bigloop.optimize.harm import HarmSource, harm_checks

STEPS = ("policies", "demos", "instructions", "tool_docs")
"""The steps run by default."""
ALL_STEPS = (*STEPS, "data", "finetune", "prefer", "tools", "workflow")
MODEL_STEPS = frozenset({"finetune", "prefer"})
"""The steps that change the model itself: kept only when they do no harm elsewhere."""
"""Every step; "data" only when asked for, before the steps that should use its cases;
"finetune" (a LoRA adapter for the loop's local model), "prefer" (preference tuning of
the config's adapter on pairs of verified and own replies, `finetune.prefer`), "tools"
(tools the reflector writes for the training failures, `made_tools`) and "workflow" (an
evolutionary search over the loop's structure, `optimize.workflow`) only when asked for."""


@dataclass(kw_only=True)
class Tuning:
    """How the `finetune` step trains: the GGUF the adapter is for, the folder of its
    data, checkpoints and adapters, the LoRA settings, and the probe → train rounds."""

    base_gguf: Path
    folder: Path
    settings: LoraSettings = field(default_factory=LoraSettings)
    rounds: int = 1
    harm: Sequence[HarmSource] = ()
    """Examples from sources the training never drew from: a tuned model that beats dev
    is kept only when it loses nothing on any of them (`bigloop.optimize.harm`)."""


@dataclass(kw_only=True)
class Change:
    """An accepted change and what it gained on dev."""

    step: str
    what: str
    dev_before: float
    dev_after: float


@dataclass(kw_only=True)
class Proposal:
    """What a step found: the best candidate config, its dev scores, a description.

    `speed_counts`: the step searched on accuracy and seconds together (the workflow
    search), so an equally accurate config that is clearly faster is kept too (`keeps`).
    """

    config: LoopConfig
    scores: Scores
    what: str
    speed_counts: bool = False

    def keeps(self, current: Scores) -> bool:
        """Better than `current` on dev: more accurate, or (where speed counts) as
        accurate under `FASTER` of its median seconds per example."""
        if self.scores.mean != current.mean:
            return self.scores.mean > current.mean
        return self.speed_counts and self.scores.seconds < FASTER * current.seconds


FASTER = 0.8
"""An equally accurate structure replaces the current one only when its median seconds
per example are at most this share of the current's: run-to-run timings on one machine
differ by a few percent, a fifth is a real saving."""


class Optimizer:
    """Improves a config on `bench`'s dev split.

    Args:
        evaluator: scores configs on examples (and remembers them).
        reflector: the model that proposes instructions and tool docs (the embedded one
            by default; a stronger one helps).
        steps: which of `ALL_STEPS` to run, in order.
        iterations: reflective proposals tried for the instructions.
        minibatch: training examples a proposal is first tried on (it reaches dev only
            if it beats its parent there).
        memo: a file remembering proposals, for resuming.
        per_cluster: cases the data step makes per kind of training failure.
        tuning: how the finetune step trains (needed when it runs).
        tools_folder: the tool library the tools step writes (needed when it runs).
        log: receives one line per candidate tried and per step.

    Raises:
        UserError: the data step with an evaluator that fans out to workers (they
            build their own bench, which lacks the cases made here).
    """

    def __init__(
        self,
        bench: Bench,
        evaluator: Evaluator,
        reflector: ChatModel,
        *,
        steps: Sequence[str] = STEPS,
        seed: int = 0,
        iterations: int = 4,
        minibatch: int = 6,
        memo: Path | None = None,
        per_cluster: int = 4,
        tuning: Tuning | None = None,
        tools_folder: Path | None = None,
        workflow_budget: int = 6,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        if "data" in steps and evaluator.runner is not None:
            raise UserError(
                "The data step cannot run with --ray yet: the workers' benches lack the "
                "cases it makes. Drop --ray or the data step."
            )
        self.bench = bench
        self.evaluator = evaluator
        self.reflector = reflector
        self.steps = list(steps)
        self.seed = seed
        self.iterations = iterations
        self.minibatch = minibatch
        self.memo = memo
        self.per_cluster = per_cluster
        self.tuning = tuning
        self.tuned: list[dict[str, object]] = []
        self.harm: list[dict[str, object]] = []
        self.preferred: dict[str, object] | None = None
        self.tools_folder = tools_folder
        self.made: dict[str, object] | None = None
        self.searched: dict[str, object] | None = None
        self.workflow_budget = workflow_budget
        self.log = log
        self.reflections = 0
        self._memo = _load_memo(memo)

    async def run(self, base: LoopConfig) -> LoopConfig:
        """The optimized config, with its provenance."""
        started = time.perf_counter()
        parent = base.provenance
        base = base.model_copy(update={"provenance": None})
        given, dev = self.bench.examples("train"), self.bench.examples("dev")
        train = given
        current = base
        scores = await self.evaluator.score(current, dev)
        first = scores.mean
        self.log(f"base: dev {scores.right}/{len(dev)} ({scores.mean:.0%})")
        changes: list[Change] = []
        front: list[dict[str, object]] = []
        evolved: dict[str, object] | None = None
        for step in self.steps:
            if step == "data":
                train, evolved = await self._data(current, train)
                continue
            made = await self._step(step, current, scores, train, dev, front)
            if (proposal := await self._kept(step, current, scores, made)) is not None:
                changes.append(
                    Change(
                        step=step,
                        what=proposal.what,
                        dev_before=round(scores.mean, 4),
                        dev_after=round(proposal.scores.mean, 4),
                    )
                )
                self.log(
                    f"[{step}] kept: {proposal.what} — dev {scores.right} → "
                    f"{proposal.scores.right}/{len(dev)}, {scores.seconds:.1f} → "
                    f"{proposal.scores.seconds:.1f} s/example"
                )
                current, scores = proposal.config, proposal.scores
            else:
                self.log(f"[{step}] nothing beat dev {scores.right}/{len(dev)}; unchanged")
        provenance = self._provenance(
            base=base,
            parent=parent,
            given=given,
            dev=dev,
            first=first,
            last=scores.mean,
            changes=changes,
            front=front,
            started=started,
        )
        if evolved is not None:
            provenance["data"] = evolved
        if self.tuned:
            provenance["finetune"] = self.tuned
        if self.harm:
            provenance["do_no_harm"] = self.harm
        if self.preferred is not None:
            provenance["prefer"] = self.preferred
        if self.made is not None:
            provenance["tools"] = self.made
        if self.searched is not None:
            provenance["workflow"] = self.searched
        return current.model_copy(update={"provenance": provenance})

    def _provenance(
        self,
        *,
        base: LoopConfig,
        parent: dict[str, Any] | None,
        given: list[Example],
        dev: list[Example],
        first: float,
        last: float,
        changes: list[Change],
        front: list[dict[str, object]],
        started: float,
    ) -> dict[str, object]:
        """How the optimized config was made: the data and settings, the base config, the
        dev score before (`first`) and after (`last`), the changes kept, the policy front,
        the `parent` config's own provenance, and what this session spent since `started`."""
        return {
            "bench": self.bench.name,
            "train": [e.id for e in given],
            "dev": [e.id for e in dev],
            "seed": self.seed,
            "steps": self.steps,
            "reflector": self.reflector.name,
            "iterations": self.iterations,
            "minibatch": self.minibatch,
            "base": base.model_dump(mode="json", exclude={"provenance"}),
            "base_fingerprint": fingerprint(base),
            "dev_before": round(first, 4),
            "dev_after": round(last, 4),
            "changes": [asdict(c) for c in changes],
            "policy_front": front,
            "parent": parent,
            "cost": {
                "note": "this session's spend; evaluations remembered from an interrupted "
                "earlier session are not counted again",
                "model_calls": self.evaluator.model_calls + self.reflections,
                "reflections": self.reflections,
                "evaluation_minutes": round(self.evaluator.seconds / 60, 2),
                "minutes": round((time.perf_counter() - started) / 60, 2),
            },
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    async def _step(
        self,
        step: str,
        current: LoopConfig,
        scores: Scores,
        train: list[Example],
        dev: list[Example],
        front: list[dict[str, object]],
    ) -> Proposal | None:
        if step == "policies":
            return await self._policies(current, dev, front)
        if step == "demos":
            return await self._demos(current, train, dev)
        if step == "instructions":
            return await self._instructions(current, scores, train, dev)
        if step == "tool_docs":
            return await self._tool_docs(current, train, dev)
        if step == "finetune":
            return await self._finetune(current, train, dev)
        if step == "prefer":
            return await self._prefer(current, train, dev)
        if step == "tools":
            return await self._tools(current, train, dev)
        if step == "workflow":
            return await self._workflow(current, dev)
        raise ValueError(f"Unknown step {step!r}; choose from {', '.join(ALL_STEPS)}.")

    async def _kept(
        self, step: str, current: LoopConfig, scores: Scores, proposal: Proposal | None
    ) -> Proposal | None:
        """`proposal` when it beats `current` on dev (and, for a changed model, does no
        harm elsewhere); None otherwise."""
        if proposal is None or not proposal.keeps(scores):
            return None
        if step in MODEL_STEPS:
            return await self._unharmed(step, current, proposal)
        return proposal

    async def _unharmed(
        self, step: str, current: LoopConfig, proposal: Proposal
    ) -> Proposal | None:
        """`proposal`, unless it changes the model and loses on data the training never
        saw (`Tuning.harm`); every check goes into the provenance."""
        sources = self.tuning.harm if self.tuning is not None else ()
        if not sources:
            self.log(f"[{step}] no do-no-harm sources given: kept on dev alone")
            return proposal
        checks = await harm_checks(current, proposal.config, sources, self.log)
        self.harm.append({"step": step, "checks": [asdict(c) for c in checks]})
        if lost := [c.source for c in checks if c.loses]:
            self.log(f"[{step}] rejected: it loses on {', '.join(lost)} (never trained on)")
            return None
        return proposal

    async def _data(
        self, current: LoopConfig, train: list[Example]
    ) -> tuple[list[Example], dict[str, object]]:
        """The training list with cases like its failures added, and what was done."""
        if not isinstance(self.bench, data.MakesVariants):
            self.log(f"[data] {self.bench.name} cannot make new cases; skipped")
            return train, {"skipped": "the bench cannot make new cases"}
        evolved = await data.evolve(
            self.bench,
            self.evaluator,
            current,
            train,
            per_cluster=self.per_cluster,
            seed=self.seed,
        )
        for c in evolved.clusters:
            self.log(
                f"[data] {c.signature}: {c.failures} failures in training; "
                f"{len(c.generated)} new cases, {c.failed} of them failed"
            )
        self.log(f"[data] training on {len(evolved.train)} examples (was {len(train)})")
        return evolved.train, {"per_cluster": self.per_cluster, **evolved.provenance()}

    async def _finetune(
        self, current: LoopConfig, train: list[Example], dev: list[Example]
    ) -> Proposal | None:
        from bigloop.optimize.finetune.step import TeachesTurns, finetune, rounds_record

        if not isinstance(self.bench, TeachesTurns) or self.tuning is None:
            self.log(f"[finetune] {self.bench.name} cannot make training turns; skipped")
            return None
        t = self.tuning
        config, scores, rounds = await finetune(
            self.bench,
            self.evaluator,
            current,
            train,
            dev,
            base_gguf=t.base_gguf,
            folder=t.folder,
            settings=t.settings,
            rounds=t.rounds,
            log=self.log,
        )
        self.tuned = rounds_record(rounds)
        what = f"a LoRA adapter ({config.adapter}) trained on {rounds[-1].turns} verified turns"
        return Proposal(config=config, scores=scores, what=what)

    async def _prefer(
        self, current: LoopConfig, train: list[Example], dev: list[Example]
    ) -> Proposal | None:
        from bigloop.optimize.finetune.prefer import PreferenceSettings
        from bigloop.optimize.finetune.step import TeachesPairs, prefer

        if not isinstance(self.bench, TeachesPairs) or self.tuning is None:
            self.log(f"[prefer] {self.bench.name} cannot make preference pairs; skipped")
            return None
        t = self.tuning
        done = await prefer(
            self.bench,
            self.evaluator,
            current,
            train,
            dev,
            base_gguf=t.base_gguf,
            folder=t.folder,
            settings=PreferenceSettings.like(t.settings),
            log=self.log,
        )
        if done is None:
            return None
        config, scores, record = done
        self.preferred = record
        what = f"preference tuning ({config.adapter}) on {record['pairs']} pairs"
        return Proposal(config=config, scores=scores, what=what)

    async def _tools(
        self, current: LoopConfig, train: list[Example], dev: list[Example]
    ) -> Proposal | None:
        from bigloop.atoms.made import ToolLibrary
        from bigloop.optimize import made_tools

        if not isinstance(self.bench, made_tools.KnowsAnswers) or self.tools_folder is None:
            self.log(f"[tools] {self.bench.name} cannot say its answers; skipped")
            return None
        runs = await self.evaluator.score(current, train)
        failures = [e for e in train if runs.outcomes[e.id].score < 1]
        self.log(f"[tools] {len(failures)} training failures; a tool asked for each")
        library = ToolLibrary(self.tools_folder)
        attempts = await made_tools.make_tools(
            self.bench, failures, self.reflector, library, log=self.log
        )
        self.made = made_tools.record(attempts, self.tools_folder)
        accepted = [a.tool for a in attempts if a.tool]
        if not accepted:
            return None
        with_tools = current.model_copy(update={"tools_dir": str(self.tools_folder)})
        scores = await self.evaluator.score(with_tools, dev)
        self.log(f"[tools] with {len(accepted)} made tools: dev {scores.right}/{len(dev)}")
        what = f"{len(accepted)} made tools ({', '.join(accepted)}) in {self.tools_folder}"
        return Proposal(config=with_tools, scores=scores, what=what)

    async def _workflow(self, current: LoopConfig, dev: list[Example]) -> Proposal | None:
        from bigloop.optimize import workflow

        fixed = getattr(self.bench, "fixed", ())  # fields the bench's harness sets itself
        genes = {name: values for name, values in workflow.GENES.items() if name not in fixed}
        if strong := getattr(self.bench, "strong", None):
            genes["escalate"] = (None, strong)
        started = self.evaluator.seconds
        trials = await workflow.search(
            self.evaluator,
            current,
            dev,
            genes=genes,
            budget=self.workflow_budget,
            seed=self.seed,
            log=self.log,
        )
        self.searched = workflow.record(trials, len(dev)) | {
            "evaluation_minutes": round((self.evaluator.seconds - started) / 60, 2)
        }
        top = workflow.front(trials)[0]
        if top is trials[0]:
            return None
        return Proposal(
            config=top.config, scores=top.scores, what=f"workflow {top.label}", speed_counts=True
        )

    async def _policies(
        self, current: LoopConfig, dev: list[Example], front: list[dict[str, object]]
    ) -> Proposal | None:
        pool = search.candidates(current, self.bench.knobs())
        trials = await search.successive_halving(self.evaluator, pool, dev)
        for t in sorted(trials, key=lambda t: (-t.rung, -t.scores.mean)):
            n = len(t.scores.outcomes)
            self.log(
                f"[policies] {t.label}: {t.scores.right}/{n} on {n} dev, "
                f"{t.scores.seconds:.1f} s/example"
            )
        best = search.pareto_front(trials)
        front.extend(
            {"label": t.label, "dev": round(t.scores.mean, 4), "s_per_example": t.scores.seconds}
            for t in best
        )
        top = best[0]
        return (
            None
            if top.label == "base"
            else Proposal(config=top.config, scores=top.scores, what=top.label)
        )

    async def _demos(
        self, current: LoopConfig, train: list[Example], dev: list[Example]
    ) -> Proposal | None:
        bootstrap = await self.evaluator.score(current, train)
        pool = demos.demo_pool([o.demo for o in bootstrap.outcomes.values() if o.score >= 1])
        sets = demos.demo_sets(pool, seed=self.seed)
        self.log(f"[demos] {len(pool)} successful training runs; {len(sets)} sets to try")
        tried = [("base", current)] + [
            (
                f"set {k + 1}: {len(s)} demos ({'; '.join(d.task[:40] for d in s)})",
                current.model_copy(update={"demos": s}),
            )
            for k, s in enumerate(sets)
        ]
        return await self._best_of(tried, dev, "demos")

    async def _instructions(
        self, current: LoopConfig, scores: Scores, train: list[Example], dev: list[Example]
    ) -> Proposal | None:
        rng = random.Random(self.seed)
        pool = instructions.ParetoPool()
        pool.add(instructions.Candidate(instructions=current.system, scores=scores))
        for k in range(self.iterations):
            parent = pool.pick(rng)
            parent_config = current.model_copy(update={"system": parent.instructions})
            batch = rng.sample(train, min(self.minibatch, len(train)))
            before = await self.evaluator.score(parent_config, batch)
            failures = [
                (e, before.outcomes[e.id]) for e in batch if before.outcomes[e.id].score < 1
            ]
            if not failures:
                self.log(f"[instructions] {k + 1}: parent right on its minibatch; next")
                continue
            prompt = instructions.reflection_prompt(parent.instructions, failures[:4])
            text = await self._propose(prompt, instructions.propose, k)
            if text is None or text == parent.instructions:
                self.log(f"[instructions] {k + 1}: no usable proposal")
                continue
            child = current.model_copy(update={"system": text})
            after = await self.evaluator.score(child, batch)
            self.log(
                f"[instructions] {k + 1}: minibatch {before.right} → {after.right}/{len(batch)}: "
                f"{text[:100]!r}"
            )
            if after.mean <= before.mean:
                continue
            on_dev = await self.evaluator.score(child, dev)
            self.log(f"[instructions] {k + 1}: dev {on_dev.right}/{len(dev)}")
            pool.add(instructions.Candidate(instructions=text, scores=on_dev))
        await self._merge(pool, current, dev)
        best = pool.best()
        if best.instructions == current.system:
            return None
        config = current.model_copy(update={"system": best.instructions})
        return Proposal(
            config=config, scores=best.scores, what=f"instructions: {best.instructions!r}"
        )

    async def _merge(
        self, pool: instructions.ParetoPool, current: LoopConfig, dev: list[Example]
    ) -> None:
        """GEPA's merge: the rules of two candidates that are right on different dev
        examples, joined and scored on dev; added to the pool (so `best` may pick it)."""
        pair = pool.pair()
        if pair is None:
            return
        text = instructions.merge(pair[0].instructions, pair[1].instructions)
        if text is None or any(c.instructions == text for c in pool.candidates):
            return
        on_dev = await self.evaluator.score(current.model_copy(update={"system": text}), dev)
        self.log(
            f"[instructions] merge of {pair[0].scores.right} and {pair[1].scores.right} "
            f"right: dev {on_dev.right}/{len(dev)}"
        )
        pool.add(instructions.Candidate(instructions=text, scores=on_dev))

    async def _tool_docs(
        self, current: LoopConfig, train: list[Example], dev: list[Example]
    ) -> Proposal | None:
        specs = {s.name: s for s in self.bench.tools()}
        if not specs:
            self.log("[tool_docs] the bench shares no tools across examples; skipped")
            return None
        runs = await self.evaluator.score(current, train)
        wrong = [m for o in runs.outcomes.values() for m in o.mistakes]
        by_tool = tool_docs.mistakes_by_tool(wrong, list(specs))
        tried: list[tuple[str, LoopConfig]] = [("base", current)]
        for k, (name, found) in enumerate(list(by_tool.items())[:3]):
            spec = specs[name]
            if name in current.tool_docs:
                spec = type(spec)(
                    name=name, description=current.tool_docs[name], parameters=spec.parameters
                )
            text = await self._propose(
                tool_docs.rewrite_prompt(spec, found[:5]), tool_docs.propose_doc, k
            )
            if text is None:
                continue
            self.log(f"[tool_docs] {name} ({len(found)} mistakes): {text[:100]!r}")
            docs = {**current.tool_docs, name: text}
            tried.append(
                (f"doc of {name}: {text!r}", current.model_copy(update={"tool_docs": docs}))
            )
        if len(tried) == 1:
            self.log("[tool_docs] no tool was called wrongly in training, or no usable rewrite")
            return None
        return await self._best_of(tried, dev, "tool_docs")

    async def _best_of(
        self, tried: list[tuple[str, LoopConfig]], dev: list[Example], step: str
    ) -> Proposal | None:
        trials = await search.successive_halving(self.evaluator, tried, dev)
        for t in trials:
            n = len(t.scores.outcomes)
            self.log(f"[{step}] {t.label[:100]}: {t.scores.right}/{n}")
        top = search.pareto_front(trials)[0]
        if top.label == "base":
            return None
        return Proposal(config=top.config, scores=top.scores, what=top.label)

    async def _propose(
        self, prompt: str, propose: Callable[..., Awaitable[str | None]], k: int
    ) -> str | None:
        text_key = f"{self.reflector.name}:{self.seed}:{k}:{prompt}"
        key = hashlib.sha256(text_key.encode()).hexdigest()[:20]
        if key in self._memo:
            return self._memo[key]
        text = await propose(self.reflector, prompt, seed=self.seed + k)
        self.reflections += 1
        self._memo[key] = text
        if self.memo is not None:
            append_line(self.memo, json.dumps({"key": key, "text": text}, ensure_ascii=False))
        return text


def _load_memo(path: Path | None) -> dict[str, str | None]:
    memo: dict[str, str | None] = {}
    if path is None or not path.exists():
        return memo
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        memo[row["key"]] = row["text"]
    return memo
