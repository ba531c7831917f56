"""`bigloop tools`: the tool registry (list, search, build) and the tools the loop writes
itself (make, recheck; `bigloop.atoms.made`)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from bigloop import report
from bigloop.cli_parts.options import BaseUrlOpt, JsonOpt, TraceDbOpt, need_plugin

tools_app = typer.Typer(help="The tool registry: list, search, build.", no_args_is_help=True)

RegistryOpt = Annotated[
    Path | None,
    typer.Option("--registry", "-r", help="A saved registry folder (default: the built-in tools)."),
]


def _registry(path: Path | None) -> Any:
    from bigloop.atoms import builtin
    from bigloop.registry import Registry

    if path is not None:
        return Registry.load(path)
    registry = Registry()
    registry.add_tools(builtin.default_tools())
    return registry


@tools_app.command("list")
def tools_list(
    registry_path: RegistryOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many to show.")] = 50,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """The registry's atoms with their cards; reliability and latency as observed in the
    traces when there are any."""
    import time

    from bigloop.optimize.observe import learn_cards
    from bigloop.trace.store import TraceStore

    start = time.perf_counter()
    registry = _registry(registry_path)
    load_s = time.perf_counter() - start
    store = TraceStore(trace_db)
    cards = learn_cards(registry.cards[:limit], store)
    if json_out:
        print(json.dumps([asdict(c) for c in cards], indent=2))
        return
    console = report.make_console()
    console.print(report.cards_table(cards))
    console.print(f"[dim]{len(registry)} atoms, loaded in {load_s * 1000:.0f} ms[/]")


@tools_app.command("search")
def tools_search(
    query: Annotated[str, typer.Argument(help="What the tool should do, in words.")],
    registry_path: RegistryOpt = None,
    k: Annotated[int, typer.Option("--k", "-k", help="How many results.")] = 5,
    mode: Annotated[
        str, typer.Option("--mode", help="hybrid (BM25 + MiniLM), bm25 or dense.")
    ] = "hybrid",
    json_out: JsonOpt = False,
) -> None:
    """Search the registry for the tools that best fit QUERY."""
    from bigloop._errors import UserError

    if mode not in ("hybrid", "bm25", "dense"):
        raise UserError(f"--mode {mode!r}: use hybrid, bm25 or dense.")
    hits = _registry(registry_path).search(query, k=k, mode=mode)
    if json_out:
        rows = [{"rank": h.rank, "score": h.score, "name": h.card.name} for h in hits]
        print(json.dumps(rows, indent=2))
        return
    console = report.make_console()
    for h in hits:
        console.print(report.hit_line(h))


@tools_app.command("build")
def tools_build(
    out: Annotated[Path, typer.Argument(help="Folder to save the registry in.")],
    bfcl: Annotated[
        bool, typer.Option("--bfcl", help="Add every distinct BFCL function doc (~2,900).")
    ] = False,
    dense: Annotated[
        bool, typer.Option("--dense/--no-dense", help="Embed the cards (MiniLM) for hybrid search.")
    ] = True,
    json_out: JsonOpt = False,
) -> None:
    """Build a registry of the built-in tools (and BFCL's functions) and save it."""
    registry = _registry(None)
    if bfcl:
        registry.add_cards(need_plugin("bigloop.tool_cards", "bfcl")())
    registry.build(dense=dense, progress=not json_out)
    registry.save(out)
    if json_out:
        print(json.dumps({"atoms": len(registry), "saved": str(out)}))
        return
    report.make_console().print(f"Saved {len(registry)} atoms to {out}.")


@tools_app.command("make")
def tools_make(
    description: Annotated[str, typer.Argument(help="What the tool does, in plain words.")],
    examples: Annotated[
        Path,
        typer.Option(
            "--examples",
            help='JSON Lines of calls with known results: {"arguments": {...}, "result": ...}.',
        ),
    ],
    tools_dir: Annotated[
        Path, typer.Option("--tools-dir", help="The tool library to add the tool to.")
    ] = Path("tools"),
    maker: Annotated[
        str,
        typer.Option(
            "--maker",
            help="The model that writes the tool: 'embedded' (installed by setup), "
            "'coder-1.5b' (writes better tools: pip install '.[strong]'), ...",
        ),
    ] = "embedded",
    base_url: BaseUrlOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Have a model write a tool: it is tested in the Python sandbox on the examples and
    added to the library only when it passes them all (use it with `run --tools-dir`)."""
    from bigloop.atoms.made import MadeTool, ToolLibrary, make_tool
    from bigloop.atoms.models.spec import ModelSpec

    rows = _examples(examples)
    model = ModelSpec(name=maker, base_url=base_url).build()
    import asyncio

    made = asyncio.run(make_tool(description, rows, model))
    console = report.make_console()
    if not isinstance(made, MadeTool):
        if json_out:
            print(json.dumps({"made": False, "reason": made.reason}))
        else:
            console.print(f"[bold red]rejected:[/] {report.shown(made.reason)}", soft_wrap=True)
        sys.exit(1)
    path = ToolLibrary(tools_dir).save(made)
    if json_out:
        print(
            json.dumps(
                {
                    "made": True,
                    "name": made.name,
                    "version": made.version,
                    "examples": len(rows),
                    "path": str(path),
                }
            )
        )
        return
    console.print(f"made {made.name} v{made.version}: passed {len(rows)} examples; {path}")


def _examples(path: Path) -> list[Any]:
    from bigloop._errors import UserError
    from bigloop.atoms.made import Example

    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        return [
            Example(arguments=dict(row["arguments"]), expected=row["result"])
            for row in map(json.loads, lines)
        ]
    except OSError as e:
        raise UserError(f"Cannot read the examples {path}: {e.strerror}.") from None
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(
            f'{path}: each line must be {{"arguments": {{...}}, "result": ...}} ({e}).'
        ) from None


@tools_app.command("recheck")
def tools_recheck(
    tools_dir: Annotated[Path, typer.Argument(help="The tool library.")],
    json_out: JsonOpt = False,
) -> None:
    """Run every made tool's examples again in the sandbox; retire the ones that fail."""
    import asyncio

    from bigloop.atoms.made import ToolLibrary

    retired = asyncio.run(ToolLibrary(tools_dir).recheck())
    if json_out:
        print(json.dumps({"retired": retired}))
        return
    report.make_console().print(f"retired: {', '.join(retired)}" if retired else "all pass")
