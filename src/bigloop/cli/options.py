"""Command-line options shared by the modules of the `bigloop` command line (`cli`,
`cli_serve`): one definition each, so the same flag reads the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="'embedded' (default), an installable model (coder-1.5b), a .gguf path, "
        "or a server's model name together with --base-url.",
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1."),
]
TraceDbOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace-db",
        help="Trace file, or a postgresql:// URL (default: $BIGLOOP_TRACE_DB, else "
        "traces.db in the user data folder or $BIGLOOP_HOME).",
    ),
]
McpOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        help="Offer the tools of this MCP server: a command line run over stdio "
        '(e.g. "mcp-server-time") or a streamable HTTP URL (e.g. http://127.0.0.1:8765/mcp). '
        "Repeatable; needs the 'mcp' extra.",
    ),
]

OffOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--off",
        help="Switch off one of the loop's default policies, e.g. clarify or rank_tools "
        "(repeatable; a wrong name lists them all; `bigloop policies` lists them).",
    ),
]


BENCHMARKS_MISSING = (
    "This command runs bigloop's benchmarks, which are a separate package: pip install "
    "bigloop-eval (in a checkout: pip install -e packages/bigloop-eval; `make setup` does it)."
)


def plugins(group: str) -> dict[str, Any]:
    """The entry points of `group` that installed packages offer, loaded, by name; one
    that fails to load is left out (what it offered then reads as not installed)."""
    from importlib.metadata import entry_points

    loaded = {}
    for point in entry_points(group=group):
        try:
            loaded[point.name] = point.load()
        except ImportError:
            continue
    return loaded


def need_plugin(group: str, name: str) -> Any:
    """The entry point `name` of `group`.

    Raises:
        UserError: no installed package offers it; the message says how to install it.
    """
    from bigloop._errors import UserError

    found = plugins(group).get(name)
    if found is None:
        raise UserError(BENCHMARKS_MISSING)
    return found


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
