"""Command-line options shared by the modules of the `bigloop` command line
(`bigloop.cli`, `bigloop.cli.serve`, `bigloop.cli.tools`) and the commands other packages
add: one definition each, so the same flag reads the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from bigloop.config import LoopConfig

BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help=LoopConfig.model_fields["base_url"].description),
]
TraceDbOpt = Annotated[
    Path | None,
    typer.Option("--trace-db", help=LoopConfig.model_fields["trace_db"].description),
]
BENCHMARKS_MISSING = (
    "This command runs bigloop's benchmarks, which are a separate package: pip install "
    "bigloop-eval (in a checkout: pip install -e packages/bigloop-eval; `make setup` does it)."
)


BROKEN: dict[str, str] = {}
"""Entry points that are installed but failed to load, by "group:name": why."""


def plugins(group: str) -> dict[str, Any]:
    """The entry points of `group` that installed packages offer, loaded, by name; one
    that fails to load is left out, and why is kept in `BROKEN` for `missing_message`."""
    from importlib.metadata import entry_points

    loaded = {}
    for point in entry_points(group=group):
        try:
            loaded[point.name] = point.load()
        except ImportError as e:
            BROKEN[f"{group}:{point.name}"] = f"{point.value}: {e}"
    return loaded


def missing_message() -> str:
    """What to do when a benchmark command is absent: install the package, or, where it
    is installed but failed to load, what failed."""
    if not BROKEN:
        return BENCHMARKS_MISSING
    failed = "; ".join(BROKEN.values())
    return f"bigloop-eval is installed but could not be loaded ({failed}). {BENCHMARKS_MISSING}"


def need_plugin(group: str, name: str) -> Any:
    """The entry point `name` of `group`.

    Raises:
        UserError: no installed package offers it; the message says how to install it.
    """
    from bigloop._errors import UserError

    found = plugins(group).get(name)
    if found is None:
        raise UserError(missing_message())
    return found


ConfigFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="A JSON file of loop settings (LoopConfig fields); options given on the "
        "command line override its values.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
TokenOpt = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="BIGLOOP_TOKEN",
        help="A bearer token clients must send (Authorization: Bearer TOKEN); required "
        "when listening beyond loopback.",
        show_default=False,
    ),
]
HostOpt = Annotated[
    str,
    typer.Option(
        "--host",
        help="Address to listen on. The default answers this machine only; any other "
        "address needs --token.",
    ),
]
PortOpt = Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")]
