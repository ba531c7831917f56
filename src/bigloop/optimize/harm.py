"""Do no harm: a changed model is kept only when it loses nothing on data it never saw.

A LoRA adapter can rise on its own dev split and still make everything else worse
(measured, issue 43: the BFCL-trained adapter got 0 of 48 everyday tasks outside the
project, against 13 for the untuned model). So the steps that change the model itself
(`finetune`, `prefer`) pass one more gate after dev: the candidate and the current
config run on each `HarmSource` — examples from sources the training never drew from
(other benchmarks, other categories, other task families) — and the candidate is
rejected when it is right on fewer of any source's examples than the current config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example
from bigloop.optimize.evaluate import Evaluator

__all__ = ["HarmCheck", "HarmSource", "harm_checks"]


@dataclass(kw_only=True)
class HarmSource:
    """Examples the training never saw, with the evaluator that scores them."""

    name: str
    evaluator: Evaluator
    examples: list[Example]


@dataclass(kw_only=True)
class HarmCheck:
    """One source's verdict: how many examples the current and the candidate config get
    right."""

    source: str
    n: int
    before: int
    after: int

    @property
    def loses(self) -> bool:
        return self.after < self.before


async def harm_checks(
    current: LoopConfig,
    candidate: LoopConfig,
    sources: Sequence[HarmSource],
    log: Callable[[str], None] = lambda line: None,
) -> list[HarmCheck]:
    """Each source's check of `candidate` against `current`, logged as it completes."""
    checks = []
    for source in sources:
        before = await source.evaluator.score(current, source.examples)
        after = await source.evaluator.score(candidate, source.examples)
        check = HarmCheck(
            source=source.name, n=len(source.examples), before=before.right, after=after.right
        )
        verdict = "LOSES" if check.loses else "no loss"
        log(f"[harm] {source.name}: {check.before} → {check.after}/{check.n} ({verdict})")
        checks.append(check)
    return checks
