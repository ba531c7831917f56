"""The run's meter: its accounting against its `Budget` — model turns, tokens, cost,
corrections and wall time — and the checks that stop a run at a limit."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bigloop._errors import BudgetExceeded, UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import Usage
from bigloop.runtime.calls import clip


@dataclass(kw_only=True)
class Budget:
    """Limits of one run.

    Attributes:
        max_steps: model turns.
        max_tokens: prompt + completion tokens.
        max_seconds: wall time of the run.
        max_cost: cost from the atoms' cards (`cost` per call, `cost_per_token`).
        max_step_seconds: wall time of one model turn.
        max_repairs: invalid replies and calls sent back to the model for correction
            (repeated identical calls count too: runaway loops stop here).
        max_calls_per_turn: calls made from one model turn; the model is told that the
            rest were not made.
    """

    max_steps: int = 8
    max_tokens: int | None = None
    max_seconds: float | None = None
    max_cost: float | None = None
    max_step_seconds: float | None = None
    max_repairs: int = 3
    max_calls_per_turn: int = 16

    def __post_init__(self) -> None:
        if self.max_calls_per_turn < 1:
            raise UserError(
                f"Budget.max_calls_per_turn must be at least 1, not {self.max_calls_per_turn}."
            )


@dataclass(kw_only=True)
class Meter:
    """What one run has used so far, against its `budget`.

    Attributes:
        usage: tokens (and seconds) of the model turns.
        cost: from the atoms' cards: model turns and tool calls.
        model_turns: turns counted against `Budget.max_steps`.
        repairs: corrections of the model counted against `Budget.max_repairs`.
        started: when the run (or its resume) started, `time.perf_counter()`.
    """

    budget: Budget
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    model_turns: int = 0
    repairs: int = 0
    started: float = field(default_factory=lambda: time.perf_counter())

    def check(self) -> None:
        """Raise `BudgetExceeded` when a limit of the run is reached."""
        b = self.budget
        if self.model_turns >= b.max_steps:
            raise BudgetExceeded(f"No answer within {b.max_steps} steps.")
        if b.max_tokens is not None and self.usage.total_tokens >= b.max_tokens:
            raise BudgetExceeded(f"Token budget of {b.max_tokens} used up.")
        if b.max_seconds is not None and time.perf_counter() - self.started >= b.max_seconds:
            raise BudgetExceeded(f"Time budget of {b.max_seconds:g} s used up.")
        if b.max_cost is not None and self.cost >= b.max_cost:
            raise BudgetExceeded(f"Cost budget of {b.max_cost:g} used up ({self.cost:g}).")

    def count_repair(self, problem: str, n: int = 1) -> None:
        """Count `n` corrections of the model; raise `BudgetExceeded` past the limit."""
        self.repairs += n
        if self.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model's replies stayed invalid after "
                f"{self.budget.max_repairs} corrections; last: {clip(problem)}"
            )

    def count_mistakes(self, n: int) -> None:
        """Count `n` invalid calls; raise `BudgetExceeded` past the repair limit."""
        self.repairs += n
        if self.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model made {self.repairs} invalid calls or replies "
                f"(limit {self.budget.max_repairs})."
            )

    def count_turn(self, usage: Usage, card: AtomCard, *, turn: bool = True) -> None:
        """Count a model turn (`turn=False`: a continuation of the last one) and its cost."""
        self.model_turns += turn
        self.usage.add(usage)
        self.cost += card.cost + card.cost_per_token * usage.total_tokens
