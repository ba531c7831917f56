"""Errors, in three families.

```
BigloopError
├── ModelRetry           the model can fix it: fed back to the model as an observation
│                        (so is unreadable output: `ModelResponse.error`)
│   ├── UnknownTool
│   └── InvalidArguments
├── UserError            the developer using bigloop can fix it: fails fast, the fix in the message
│   └── WeightsError
└── RunFailure           the run cannot go on
    ├── BudgetExceeded
    ├── InputRequired    the loop must ask the user, and no one can answer now
    ├── ModelUnavailable
    └── ToolFailure      a tool raised or timed out (`Tool.call` raises it; the loop shows
                         it to the model as the call's result)
```

Exceptions never log or print; callers decide what to show.
"""

from __future__ import annotations


class BigloopError(Exception):
    """Base class of every error bigloop raises."""


class ModelRetry(BigloopError):
    """A mistake the model can correct; its message is shown to the model verbatim."""


class UnknownTool(ModelRetry):
    """The model named a tool that was not offered."""


class InvalidArguments(ModelRetry):
    """The arguments did not validate against the tool's schema."""


class UserError(BigloopError):
    """A mistake in how bigloop is used; the message says how to fix it."""


class WeightsError(UserError):
    """The embedded model's weights are missing or do not match their pinned hash."""


class InvalidToolSchema(UserError):
    """A tool's argument schema that a model cannot be constrained to (the developer's, or
    an API client's, to fix)."""


class RunFailure(BigloopError):
    """The run stopped before an answer."""


class BudgetExceeded(RunFailure):
    """A step, token or time budget ran out."""


class InputRequired(RunFailure):
    """The loop needs an answer from the user and has no way to ask now (no `ask`
    callback, or not interactive). The run stops with the question; resuming it with the
    answer continues it."""

    def __init__(self, question: str, record: object = None) -> None:
        super().__init__(question)
        self.question = question
        self.record = record
        """The question as data (`bigloop.trace.records.Question`), when the loop asked."""


class ModelUnavailable(RunFailure):
    """The model could not be loaded or reached."""


class ModelBusy(ModelUnavailable):
    """The model's queue of waiting requests is full (a server answers 503: retry later)."""


class ToolFailure(RunFailure):
    """A tool raised or timed out."""
