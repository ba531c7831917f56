"""Scoring configs on examples, each (config, example) pair once: results are appended
to a JSON Lines file as they complete, so an interrupted optimization resumes where it
stopped and a config met again (the base config on dev, say) costs nothing."""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bigloop.config import ADDED_LATER, Demo, LoopConfig
from bigloop.optimize.bench import Bench, Example, Mistake, Outcome

BatchRunner = Callable[[LoopConfig, list[Example]], Awaitable[list[Outcome]]]
"""Runs a config on several examples at once (e.g. on a Ray cluster,
`bigloop_eval.distributed.RayBenchRunner`), returning their outcomes in order."""


def fingerprint(config: LoopConfig) -> str:
    """What identifies a config's behaviour: every field but its provenance."""
    data = config.model_dump(mode="json", exclude={"provenance"})
    data["off"] = sorted(data["off"])
    for later in ("escalate", "adapter", "adapter_sha256", "tools_dir"):
        if data[later] is None:  # added later: unset, they keep the old fingerprints
            del data[later]
    for later, default in {"vote": 1, **ADDED_LATER}.items():
        if data.get(later) == default:  # added later: the default keeps the old fingerprints
            del data[later]
    if data.get("tools_dir"):  # the same folder may hold other tools later
        data["tools_dir"] = [data["tools_dir"], _contents(Path(data["tools_dir"]))]
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _contents(folder: Path) -> str:
    """A hash of the tool library in `folder` (every version file's bytes)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.v*.json")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(kw_only=True)
class Scores:
    """A config's outcomes on a list of examples."""

    outcomes: dict[str, Outcome]

    @property
    def mean(self) -> float:
        return statistics.fmean(o.score for o in self.outcomes.values()) if self.outcomes else 0.0

    @property
    def right(self) -> int:
        return sum(o.score >= 1.0 for o in self.outcomes.values())

    @property
    def seconds(self) -> float:
        """Median seconds per example."""
        return statistics.median(o.seconds for o in self.outcomes.values()) if self.outcomes else 0

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes.values() if o.score < 1.0]


class Evaluator:
    """Runs a bench's examples under configs, remembering every outcome in `path`.

    Args:
        runner: runs the examples a config still lacks all at once (fanned out over
            workers); None runs them here, one after the other.

    Attributes:
        model_calls: model turns spent by evaluations run here (cached ones not counted).
        seconds: seconds the runs took, summed (over workers, not wall time).
    """

    def __init__(
        self,
        bench: Bench,
        path: Path,
        *,
        on_outcome: Callable[[Outcome], None] | None = None,
        runner: BatchRunner | None = None,
    ) -> None:
        self.bench = bench
        self.runner = runner
        self.path = path
        self.on_outcome = on_outcome
        self.model_calls = 0
        self.seconds = 0.0
        self._done = _load(path)

    async def score(self, config: LoopConfig, examples: Sequence[Example]) -> Scores:
        """`config`'s outcomes on `examples`, running only the pairs not seen before."""
        key = fingerprint(config)
        todo = [e for e in examples if (key, e.id) not in self._done]
        if self.runner is not None and len(todo) > 1:
            for outcome in await self.runner(config, todo):
                self._remember(key, outcome)
        outcomes = {}
        for example in examples:
            found = self._done.get((key, example.id))
            if found is None:
                found = await self.bench.evaluate(config, example)
                self._remember(key, found)
            if self.on_outcome:
                self.on_outcome(found)
            outcomes[example.id] = found
        return Scores(outcomes=outcomes)

    def _remember(self, key: str, outcome: Outcome) -> None:
        self.model_calls += outcome.model_calls
        self.seconds += outcome.seconds
        self._done[(key, outcome.example_id)] = outcome
        append_line(
            self.path, json.dumps(outcome_row(key, outcome), ensure_ascii=False, default=str)
        )


def append_line(path: Path, line: str) -> None:
    """Append `line` to a JSON Lines file, first ending a last line an interruption cut
    short (else the two would be glued into one unreadable line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as f:
        f.seek(0, 2)
        if f.tell():
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                f.write(b"\n")
        f.write(line.encode("utf-8") + b"\n")


def outcome_row(key: str, outcome: Outcome) -> dict[str, Any]:
    """An outcome as JSON data (`outcome_of` reads it back)."""
    row = {"config": key, **asdict(outcome)}
    row["demo"] = outcome.demo.model_dump(mode="json") if outcome.demo else None
    return row


def outcome_of(row: dict[str, Any]) -> Outcome:
    """The outcome `outcome_row` wrote (its "config" key, if any, ignored)."""
    row = {k: v for k, v in row.items() if k != "config"}
    demo = row.pop("demo")
    row["demo"] = Demo.model_validate(demo) if demo else None
    row["mistakes"] = [Mistake(**m) for m in row.pop("mistakes")]
    return Outcome(**row)


def _load(path: Path) -> dict[tuple[str, str], Outcome]:
    """The outcomes already in `path` (an unfinished last line is ignored)."""
    done: dict[tuple[str, str], Outcome] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        try:
            done[(row["config"], row["example_id"])] = outcome_of(row)
        except (KeyError, TypeError):
            continue  # a row of another version: evaluated again
    return done
