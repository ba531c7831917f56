"""The `bigloop eval` and `bigloop optimize` commands, which run bigloop's benchmarks.

They live beside the benchmarks, not in bigloop: this package's entry point (group
`bigloop.commands`) adds them to the `bigloop` command when bigloop-eval is installed, so
that bigloop never imports the package that depends on it.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add `eval` and `optimize` to the `bigloop` command `app`."""
    from bigloop_eval_cli.eval import eval_app
    from bigloop_eval_cli.optimize import optimize_app

    app.add_typer(eval_app, name="eval")
    app.add_typer(optimize_app, name="optimize")
