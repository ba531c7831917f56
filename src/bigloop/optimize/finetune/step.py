"""The optimizer's `finetune` step: probe, gather verified turns, train, export, accept.

1. Probe: run the current loop on the training examples; its failures are grouped by
   what went wrong (the checker's verdict) and weigh double in the data.
2. Gather: the bench turns each training example into verified training turns
   (`TeachesTurns.turns`: the target replayed through the real loop, kept only when the
   bench's checker passes what the loop made of it).
3. Train a LoRA adapter (`train.train_adapter`) and export it as a GGUF LoRA.
4. The candidate is the current config with the adapter; the optimizer keeps it only when
   it beats the current config on dev. `rounds` > 1 repeats 1–4 from the tuned loop,
   its new failures weighing double, each round's dev score in the record (the curve).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example, Outcome
from bigloop.optimize.evaluate import Evaluator, Scores
from bigloop.optimize.finetune.prefer import PreferenceSettings
from bigloop.optimize.finetune.train import LoraSettings, Trained, train_adapter
from bigloop.optimize.finetune.turns import Pair, Turn, save_pairs, save_turns

ANSWER_SHARE = 0.05
"""The most share of training turns whose target is an answer given before any call. Measured: with
18% (every BFCL irrelevance turn, failures twice) the tuned 0.5B answered "no tool can
do this" on 13 of 50 dev cases that needed a call (dev 36 → 35 of 60;
bench/results/finetune/)."""


@runtime_checkable
class TeachesTurns(Protocol):
    """A bench whose examples can become training turns."""

    async def turns(self, config: LoopConfig, example: Example) -> list[Turn]:
        """The verified turns of `example` under `config` (empty: none could be made)."""
        ...

    def held_out(self) -> list[str]:
        """Requests training must not copy (every test and dev request)."""
        ...


@runtime_checkable
class TeachesPairs(TeachesTurns, Protocol):
    """A bench that can also contrast its verified runs with the config's own model."""

    async def pairs(self, config: LoopConfig, example: Example) -> list[Pair]:
        """The preference pairs of `example`: the states of its verified run under
        `config` where the config's model decides otherwise (empty: none)."""
        ...


@dataclass(kw_only=True)
class Round:
    """One probe → gather → train round, as recorded in the config's provenance."""

    round: int
    train_right: int
    train_n: int
    failures: dict[str, int]
    turns: int
    data_sha256: str
    dev_right: int
    dev_n: int
    training: dict[str, object]
    adapter: str
    adapter_sha256: str


@dataclass(kw_only=True)
class _Job:
    """What every round shares: the bench, evaluator, base config, splits and settings."""

    bench: TeachesTurns
    evaluator: Evaluator
    current: LoopConfig
    train: list[Example]
    dev: list[Example]
    base_gguf: Path
    folder: Path
    settings: LoraSettings
    answer_share: float
    log: Callable[[str], None]


async def finetune(
    bench: TeachesTurns,
    evaluator: Evaluator,
    current: LoopConfig,
    train: list[Example],
    dev: list[Example],
    *,
    base_gguf: Path,
    folder: Path,
    settings: LoraSettings,
    rounds: int = 1,
    answer_share: float = ANSWER_SHARE,
    log: Callable[[str], None] = lambda line: None,
) -> tuple[LoopConfig, Scores, list[Round]]:
    """The best config of `rounds` rounds (the last round's adapter is trained on every
    round's failures) with its dev scores, and the record of each round."""
    job = _Job(
        bench=bench,
        evaluator=evaluator,
        current=current,
        train=train,
        dev=dev,
        base_gguf=base_gguf,
        folder=folder,
        settings=settings,
        answer_share=answer_share,
        log=log,
    )
    candidate, record = current, []
    best: tuple[LoopConfig, Scores] | None = None
    weak: set[str] = set()
    for k in range(1, rounds + 1):
        candidate, scores, done = await _round(job, k, candidate, weak)
        record.append(done)
        if best is None or scores.mean > best[1].mean:
            best = (candidate, scores)
    assert best is not None
    return best[0], best[1], record


async def _round(
    job: _Job, k: int, candidate: LoopConfig, weak: set[str]
) -> tuple[LoopConfig, Scores, Round]:
    """Round `k`: probe `candidate` on train (its failures join `weak`), gather the
    turns, train, export; the new candidate with its dev scores and the round's record."""
    from bigloop.atoms.models.weights import file_sha256
    from bigloop.optimize.finetune.export import to_gguf

    probe = await job.evaluator.score(candidate, job.train)
    weak |= {o.example_id for o in probe.failures()}
    job.log(f"[finetune] round {k}: the loop is right on {probe.right}/{len(job.train)} training")
    gathered = await _gather(job.bench, job.current, job.train, weak, job.log)
    turns = _capped(gathered, job.answer_share, job.log)
    where = job.folder / f"round{k}"
    data_sha = save_turns(turns, where / "turns.jsonl")
    trained = train_adapter(turns, job.base_gguf, where, job.settings, progress_lines(job.log))
    adapter = to_gguf(trained.adapter, job.base_gguf, where / "adapter.gguf")
    digest = file_sha256(adapter)
    tuned = job.current.model_copy(
        update={"adapter": str(adapter.resolve()), "adapter_sha256": digest}
    )
    scores = await job.evaluator.score(tuned, job.dev)
    job.log(f"[finetune] round {k}: dev {scores.right}/{len(job.dev)} ({_cost(trained)})")
    done = Round(
        round=k,
        train_right=probe.right,
        train_n=len(job.train),
        failures=_failure_kinds(probe.failures()),
        turns=len(turns),
        data_sha256=data_sha,
        dev_right=scores.right,
        dev_n=len(job.dev),
        training=trained.summary(),
        adapter=str(adapter),
        adapter_sha256=digest,
    )
    return tuned, scores, done


async def _gather(
    bench: TeachesTurns,
    config: LoopConfig,
    train: list[Example],
    weak: set[str],
    log: Callable[[str], None],
) -> list[Turn]:
    """Every training example's verified turns, twice for one the loop failed (`weak`);
    turns whose request
    copies a held-out one (8-word overlap above a third) are dropped and counted."""
    from bigloop.optimize.finetune.turns import overlap

    held = _held_grams(bench)
    turns: list[Turn] = []
    unverified = copies = 0
    for example in train:
        made = await bench.turns(config, example)
        unverified += not made
        kept = [t for t in made if overlap(t.request, held) <= 1 / 3]
        copies += len(made) - len(kept)
        turns += kept * (2 if example.id in weak else 1)
    log(
        f"[finetune] {len(turns)} training turns from {len(train)} examples; "
        f"{unverified} could not be verified, {copies} dropped as near-copies of held-out requests"
    )
    return turns


def _held_grams(bench: TeachesTurns) -> set[tuple[str, ...]]:
    """The word 8-grams of every request training must not copy."""
    from bigloop.optimize.finetune.turns import ngrams

    held: set[tuple[str, ...]] = set()
    for request in bench.held_out():
        held |= ngrams(request)
    return held


def _capped(turns: list[Turn], share: float, log: Callable[[str], None]) -> list[Turn]:
    """`turns` with first-turn answers (no call made, `Turn.declines`) cut to `share` of
    the result: an evenly spread selection of them is kept, the order of the rest
    unchanged. Answers after tool results are not counted: they finish a task."""
    answers = [t for t in turns if t.declines]
    calls = [t for t in turns if not t.declines]
    room = int(share * len(calls) / (1 - share)) if share < 1 else len(answers)
    if len(answers) <= room:
        return turns
    kept = {id(answers[int(i * len(answers) / room)]) for i in range(room)} if room else set()
    log(
        f"[finetune] {len(answers) - len(kept)} of {len(answers)} answers without a call "
        f"left out (at most {share:.0%} of the turns)"
    )
    return [t for t in turns if id(t) in kept or not t.declines]


def _failure_kinds(failures: list[Outcome]) -> dict[str, int]:
    """How many failures of each kind (`data.signature`: BFCL's error type, ...)."""
    from bigloop.optimize.data import signature

    return dict(collections.Counter(signature(o) for o in failures).most_common())


def progress_lines(
    log: Callable[[str], None], step: str = "finetune"
) -> Callable[[int, int, int, float, float], None]:
    """Training progress as a log line every twentieth of the run."""
    first: list[int] = []

    def report(done: int, total: int, tokens: int, loss: float, spent: float) -> None:
        first[:] = first or [done - 1]
        if done % max(total // 20, 1) and done != total:
            return
        eta = spent / (done - first[0]) * (total - done)
        log(
            f"[{step}] trained {done}/{total} examples, loss {loss:.3f}, "
            f"{tokens / spent:.0f} tokens/s, ETA {eta / 60:.1f} min"
        )

    return report


def _cost(trained: Trained) -> str:
    return (
        f"{trained.steps} examples, {trained.tokens} tokens in {trained.seconds / 60:.1f} min on "
        f"{trained.device} ({trained.dtype})"
    )


def rounds_record(rounds: list[Round]) -> list[dict[str, object]]:
    return [asdict(r) for r in rounds]


async def prefer(
    bench: TeachesPairs,
    evaluator: Evaluator,
    current: LoopConfig,
    train: list[Example],
    dev: list[Example],
    *,
    base_gguf: Path,
    folder: Path,
    settings: PreferenceSettings,
    log: Callable[[str], None] = lambda line: None,
) -> tuple[LoopConfig, Scores, dict[str, object]] | None:
    """The preference step: probe `current` on train; on each failure, contrast the
    verified run with the config's own model (`TeachesPairs.pairs`); train on the pairs
    from the config's adapter (DPO, `prefer.train_preference`) and export. The tuned
    config with its dev scores and the step's record; None when no pair was found."""
    from bigloop.atoms.models.weights import file_sha256
    from bigloop.optimize.finetune.export import from_gguf, to_gguf
    from bigloop.optimize.finetune.prefer import train_preference
    from bigloop.optimize.finetune.turns import overlap

    probe = await evaluator.score(current, train)
    failed = [e for e in train if probe.outcomes[e.id].score < 1]
    log(f"[prefer] the loop is right on {probe.right}/{len(train)} training; contrasting the rest")
    held = _held_grams(bench)
    pairs: list[Pair] = []
    for example in failed:
        made = await bench.pairs(current, example)
        pairs += [p for p in made if overlap(p.turns()[0].request, held) <= 1 / 3]
    log(f"[prefer] {len(pairs)} preference pairs from {len(failed)} failed training examples")
    if not pairs:
        return None
    # a folder per starting adapter: a second preference run never overwrites its input
    started = current.checked_adapter()
    where = folder / "prefer" / (file_sha256(Path(started))[:12] if started else "fresh")
    data_sha = save_pairs(pairs, where / "pairs.jsonl")
    start = from_gguf(Path(started), base_gguf, where / "start") if started else None
    trained = train_preference(
        pairs, base_gguf, start, where, settings, progress_lines(log, "prefer")
    )
    adapter = to_gguf(trained.adapter, base_gguf, where / "adapter.gguf")
    digest = file_sha256(adapter)
    tuned = current.model_copy(update={"adapter": str(adapter.resolve()), "adapter_sha256": digest})
    scores = await evaluator.score(tuned, dev)
    log(f"[prefer] dev {scores.right}/{len(dev)} ({_cost(trained)})")
    record: dict[str, object] = {
        "train_right": probe.right,
        "train_n": len(train),
        "pairs": len(pairs),
        "families": dict(collections.Counter(p.family for p in pairs).most_common()),
        "data_sha256": data_sha,
        "started_from": current.adapter,
        "settings": asdict(settings),
        "dev_right": scores.right,
        "dev_n": len(dev),
        "training": trained.summary(),
        "adapter": str(adapter),
        "adapter_sha256": digest,
    }
    return tuned, scores, record
