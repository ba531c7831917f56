"""`bigloop serve`: publish a model or a loop to other programs, as an OpenAI-compatible
chat completions server (`serve openai`), an MCP server (`serve mcp`) or an A2A agent
(`serve a2a`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bigloop.cli_parts.config_options import config_options
from bigloop.cli_parts.options import (
    ConfigFileOpt,
    HostOpt,
    PortOpt,
    TokenOpt,
    TraceDbOpt,
)

if TYPE_CHECKING:
    from bigloop.loop import Loop

serve_app = typer.Typer(help="Serve bigloop models to other programs.", no_args_is_help=True)


def _served_loop(config_file: Path | None, given: dict[str, Any], trace_db: Path | None) -> Loop:
    """The loop a `serve` command publishes: the --config file, then the options given.
    Its irreversible calls are put to the client as questions (`approve="ask"`)."""
    from bigloop.config import LoopConfig
    from bigloop.loop import Loop
    from bigloop.trace.store import TraceStore

    base = LoopConfig.load(config_file) if config_file else LoopConfig()
    config = LoopConfig.from_data(
        base.model_dump() | given,
        source="Command line",
    )
    if trace_db is None and config.trace_db:
        trace_db = Path(config.trace_db)  # a postgresql:// URL too: TraceStore reads it back
    return Loop.from_config(config, store=TraceStore(trace_db), approve="ask")


@serve_app.command("openai")
@config_options("model", "base_url", "off")
def serve_openai_command(
    *,
    given: dict[str, Any],
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    token: TokenOpt = None,
    record_db: Annotated[
        str | None,
        typer.Option(
            "--trace-db",
            help="Record every completion as a run here: a trace file, or a postgresql:// "
            "URL shared by replicas on several hosts (default: not recorded; "
            "$BIGLOOP_TRACE_DB when set).",
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Serve as Ray Serve replicas on the Ray cluster at this address ('local' "
            "starts one on this machine). Needs the 'serve-ray' extra.",
        ),
    ] = None,
    replicas: Annotated[
        int,
        typer.Option("--replicas", help="With --ray: how many model processes serve.", min=1),
    ] = 1,
) -> None:
    """An OpenAI-compatible /v1/chat/completions for a model: its calls come back as
    structured tool_calls, decoded under the tools' grammar (streaming included), so
    LangGraph, pydantic-ai, smolagents or the openai SDK can use it as a tool caller.
    With --ray, N replicas (one model each) answer behind Ray Serve's proxy."""
    import os

    from bigloop.config import LoopConfig
    from bigloop.parts import check_names
    from bigloop.protocols.guard import allowed_hosts_for, require_token
    from bigloop.protocols.openai_server import serve_openai

    model = given.get("model", LoopConfig().model)
    base_url = given.get("base_url")
    trace_db = record_db or os.environ.get("BIGLOOP_TRACE_DB") or None
    off = check_names(given.get("off", []))
    if ray is None:
        serve_openai(
            model,
            host=host,
            port=port,
            base_url=base_url,
            off=off,
            token=token,
            trace_db=trace_db,
        )
        return
    from bigloop.protocols.openai_replicas import (
        ReplicaSpec,
        serve_openai_on_ray,
        threads_per_replica,
    )

    require_token(host, token)
    # replicas run in other folders: a .gguf model and a trace file made absolute
    paths = LoopConfig(model=model, base_url=base_url, trace_db=trace_db).with_absolute_paths()
    spec = ReplicaSpec(
        model=paths.model,
        base_url=base_url,
        off=tuple(off),
        allowed_hosts=tuple(allowed_hosts_for(host)),
        token=token,
        trace_db=paths.trace_db,
        threads=threads_per_replica(replicas),
    )
    serve_openai_on_ray(spec, address=ray, host=host, port=port, replicas=replicas)


@serve_app.command("a2a")
@config_options("model", "base_url", "tools", "a2a")
def serve_a2a_command(
    config_file: ConfigFileOpt = None,
    *,
    given: dict[str, Any],
    name: Annotated[str, typer.Option("--name", help="The agent card's name.")] = "bigloop",
    description: Annotated[
        str | None,
        typer.Option(
            "--description", help="The agent card's description (default: the model and tools)."
        ),
    ] = None,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 9999,
    token: TokenOpt = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url", help="The URL clients use, for the card (default: http://HOST:PORT/)."
        ),
    ] = None,
    trace_db: TraceDbOpt = None,
) -> None:
    """Publish a loop as an A2A agent: an agent card whose skills are its tools, tasks
    whose steps stream as status updates and whose answer is an artifact. A clarifying
    question puts the task in input-required; the next message on the task answers it
    and the run resumes. Needs the 'a2a' extra."""
    from bigloop._errors import UserError

    try:
        from bigloop.protocols.a2a_server import serve_a2a
    except ImportError as e:
        raise UserError(
            f"`bigloop serve a2a` needs bigloop's 'a2a' extra ({e.name} is not installed): "
            "pip install 'a2a-sdk[http-server]' uvicorn"
        ) from None
    loop = _served_loop(config_file, given, trace_db)
    serve_a2a(loop, host=host, port=port, url=url, name=name, description=description, token=token)


@serve_app.command("mcp")
@config_options("model", "base_url", "tools", "files", "db", "mcp")
def serve_mcp_command(
    config_file: ConfigFileOpt = None,
    *,
    given: dict[str, Any],
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio, e.g. "
            "127.0.0.1:8765 (anything but loopback needs --token).",
        ),
    ] = None,
    name: Annotated[str, typer.Option("--name", help="The server's name.")] = "bigloop",
    trace_db: TraceDbOpt = None,
    token: TokenOpt = None,
) -> None:
    """Serve the loop's tools (those `bigloop run` gets with the same options) and the
    loop itself, as the tool run_task, to any MCP client, over stdio (default) or
    streamable HTTP. A question a run asks goes to the client as an MCP elicitation when
    it supports them; otherwise the result gives the question and the run id to answer
    with. Needs the 'mcp' extra."""
    from bigloop._errors import UserError

    try:
        from bigloop.protocols.mcp_server import serve_mcp
    except ImportError as e:
        raise UserError(
            f"`bigloop serve mcp` needs bigloop's 'mcp' extra ({e.name} is not installed): "
            "pip install mcp uvicorn"
        ) from None
    loop = _served_loop(config_file, given, trace_db)
    serve_mcp(loop, http=http, name=name, token=token)
