"""Scoring configs on examples, each (config, example) pair once: results are appended
to a JSON Lines file as they complete, so an interrupted optimization resumes where it
stopped and a config met again (the base config on dev, say) costs nothing."""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bigloop.config import Demo, LoopConfig
from bigloop.optimize.bench import Bench, Example, Mistake, Outcome


def fingerprint(config: LoopConfig) -> str:
    """What identifies a config's behaviour: every field but its provenance."""
    data = config.model_dump(mode="json", exclude={"provenance"})
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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

    Attributes:
        model_calls: model turns spent by evaluations run here (cached ones not counted).
        seconds: wall seconds spent by them.
    """

    def __init__(
        self,
        bench: Bench,
        path: Path,
        *,
        on_outcome: Callable[[Outcome], None] | None = None,
    ) -> None:
        self.bench = bench
        self.path = path
        self.on_outcome = on_outcome
        self.model_calls = 0
        self.seconds = 0.0
        self._done = _load(path)

    async def score(self, config: LoopConfig, examples: Sequence[Example]) -> Scores:
        """`config`'s outcomes on `examples`, running only the pairs not seen before."""
        key = fingerprint(config)
        outcomes = {}
        for example in examples:
            found = self._done.get((key, example.id))
            if found is None:
                found = await self.bench.evaluate(config, example)
                self.model_calls += found.model_calls
                self.seconds += found.seconds
                self._done[(key, example.id)] = found
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as f:
                    row = {"config": key, **asdict(found)}
                    row["demo"] = found.demo.model_dump(mode="json") if found.demo else None
                    f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            if self.on_outcome:
                self.on_outcome(found)
            outcomes[example.id] = found
        return Scores(outcomes=outcomes)


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
        key = row.pop("config")
        demo = row.pop("demo")
        row["demo"] = Demo.model_validate(demo) if demo else None
        row["mistakes"] = [Mistake(**m) for m in row.pop("mistakes")]
        done[(key, row["example_id"])] = Outcome(**row)
    return done
