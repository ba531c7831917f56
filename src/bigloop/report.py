"""How results look on the terminal: step lines, run summaries, tables, JSON, the BFCL
scoreboard; and `Terminal`, the consoles and live status of one command.

Results go to stdout; live progress, questions and errors go to stderr, so
`bigloop run --json ... > out.json` stays machine-readable. Everything shown goes through
a `Redactor` first (by default: URL credentials, key formats, and the values of secret
environment variables), so secrets never reach the terminal; and text from models, tools
and files is shown as text (`shown`): neither rich markup nor terminal escape sequences in
it take effect.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from bigloop.atoms.models.base import Usage
from bigloop.trace.redact import Redactor

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status
    from rich.table import Table

    from bigloop.atoms.card import AtomCard
    from bigloop.atoms.models.base import ToolCall, ToolSpec
    from bigloop.registry import Hit
    from bigloop.trace.records import RunResult, Step
    from bigloop.trace.store import RunSummary


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters other than newline and tab: escape sequences (ESC, CSI), bells,
carriage returns and backspaces that would move the cursor or retitle the terminal."""


def shown(text: object, limit: int | None = None) -> str:
    """`text` (cut at `limit` characters) as rich markup that shows it exactly: markup
    escaped, control characters made visible (`\\x1b`), so that a file or a model cannot
    colour, rewrite or retitle the terminal."""
    from rich.markup import escape

    value = str(text) if limit is None else str(text)[:limit]
    return escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value))


def make_console(stderr: bool = False) -> Console:
    """A console without automatic highlighting (numbers in answers stay plain)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


class Terminal:
    """The terminal of one `run` or `resume` command.

    Args:
        json_out: print the result as JSON and nothing else: no live steps, no spinner.
        redactor: what is hidden from everything shown (default: `Redactor.from_env()`).

    Attributes:
        out: where the result goes (stdout).
        err: where live steps and questions go (stderr).
        ask: asks the user at the terminal, pausing the live status meanwhile; None when
            stdin or stderr is not a terminal, so that a run stops with its question
            instead of hanging.
        approve: shows an irreversible call (tool and arguments) and asks whether to
            make it (default: no); None when stdin or stderr is not a terminal, so that
            the run stops with the approval question (`bigloop.policies.approval`).
    """

    def __init__(self, *, json_out: bool = False, redactor: Redactor | None = None) -> None:
        self.json_out = json_out
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        self.out = make_console()
        self.err = make_console(stderr=True)
        self._status: Status | None = None
        interactive = sys.stdin.isatty() and sys.stderr.isatty()
        self.ask: Callable[[str], str] | None = self._prompt if interactive else None
        self.approve: Callable[[ToolCall, ToolSpec], bool] | None = (
            self._confirm if interactive else None
        )

    def _prompt(self, question: str) -> str:
        from rich.prompt import Prompt

        with self._paused():
            return Prompt.ask(f"[bold yellow]?[/] {shown(question)}", console=self.err)

    def _confirm(self, call: ToolCall, spec: ToolSpec) -> bool:
        from rich.prompt import Confirm

        with self._paused():
            self.err.print(approval_request(call, self.redactor), soft_wrap=True)
            try:
                return Confirm.ask("Make this call?", default=False, console=self.err)
            except EOFError:
                return False

    @contextmanager
    def _paused(self) -> Iterator[None]:
        """The live status stopped while the body runs (a prompt on the terminal)."""
        status = self._status
        if status is not None:
            status.stop()
        try:
            yield
        finally:
            if status is not None:
                status.start()

    @contextmanager
    def thinking(self, model_name: str) -> Iterator[None]:
        """A spinner on stderr while the body runs (none with `json_out`)."""
        if self.json_out:
            yield
            return
        with self.err.status(f"[dim]{model_name} is thinking…", spinner="dots") as status:
            self._status = status
            try:
                yield
            finally:
                self._status = None

    def show_step(self, step: Step) -> None:
        """One line per completed step, on stderr (none with `json_out`)."""
        if not self.json_out:
            self.err.print(step_line(step, self.redactor))

    def show_result(self, result: RunResult) -> None:
        """The answer, the question the run stopped on, or why it failed; then a summary.
        With `json_out`, the result as JSON."""
        result = self.redactor.result(result)
        if self.json_out:
            print(json.dumps(result_json(result, self.redactor), indent=2, default=str))
            return
        if result.answer is not None:
            self.out.print(f"\n[bold green]Answer:[/] {shown(result.answer)}")
        elif result.status == "input_required":
            self.out.print(
                f"\n[bold yellow]Question:[/] {shown(result.question)}\n"
                f"Answer it with: bigloop resume {result.run_id} --answer '...'"
            )
        else:
            self.out.print(f"\n[bold red]No answer[/] ({result.status}): {shown(result.error)}")
        self.out.print(summary_line(result))


def summary_line(result: RunResult) -> str:
    """Steps, tokens and model time of a run, and how to see its trace."""
    u = result.usage
    return (
        f"[dim]run {result.run_id} · {len(result.steps)} steps · "
        f"{u.prompt_tokens}+{u.completion_tokens} tokens · {u.seconds:.1f} s in the model"
        f"{floor_text(u)} · `bigloop trace show {result.run_id}`[/]"
    )


def floor_text(u: Usage) -> str:
    """The latency account of a run or a turn, for a line ("" when the backend gave none):
    prompt tokens read and reused, and model time against its floor."""
    if not u.latency():
        return ""
    text = f" (read {u.prompt_evaluated}, reused {u.prompt_reused}"
    if (ratio := u.floor_ratio) is not None:
        text += f"; floor {u.floor_seconds:.1f} s, {ratio:.1f}x"
    if u.runaway:
        text += f"; {u.runaway} runaway cut"
    return text + ")"


def approval_request(call: ToolCall, redactor: Redactor | None = None) -> str:
    """The exact call an approver is asked about, as rich markup: the tool's name and
    every argument, in full (secrets redacted)."""
    arguments = json.dumps(_redactor(redactor).value(call.arguments), ensure_ascii=False)
    return (
        f"[bold red]![/] [bold]{shown(call.name)}[/] cannot be undone. "
        f"Arguments: {shown(arguments)}"
    )


def _redactor(redactor: Redactor | None) -> Redactor:
    return redactor if redactor is not None else Redactor.from_env()


def step_line(step: Step, redactor: Redactor | None = None) -> str:
    """One step as a line of rich markup: a model turn's calls, a tool's result, a question
    (secrets redacted; default `Redactor.from_env()`)."""
    step = _redactor(redactor).step(step)
    account = ""
    if step.kind == "model" and isinstance(step.input, dict):
        usage = Usage.from_latency(
            step.input.get("latency"), prompt_tokens=step.prompt_tokens, seconds=step.seconds
        )
        account = floor_text(usage)
    tokens = (
        f"[dim]{step.seconds:.2f} s, {step.prompt_tokens}+{step.completion_tokens} tok{account}[/]"
    )
    if step.kind == "model" and isinstance(step.input, dict) and "role" in step.input:
        role = shown(step.input["role"])
        return f"[cyan]{step.index:>3} {role}[/] {shown(step.output, 300)} {tokens}"
    if step.kind == "model":
        calls = step.message.tool_calls if step.message else []
        what = shown(", ".join(f"{c.name}({json.dumps(c.arguments)})" for c in calls))
        if not calls:
            what = "answer"
            if step.error is not None:
                what = f"[red]{shown(step.error)}[/]: {shown(step.output)}"
        return f"[cyan]{step.index:>3} model[/] {what} {tokens}"
    if step.kind == "ask":
        return f"[yellow]{step.index:>3} ask[/]   {shown(step.output, 200)}"
    mark = "[green]→[/]" if step.error is None else f"[red]✗ {shown(step.error)}[/]"
    ms = step.seconds * 1000
    return (
        f"[magenta]{step.index:>3} tool[/]  {shown(step.name)} {mark} {shown(step.output, 200)} "
        f"[dim]{ms:.1f} ms[/]"
    )


def print_doctor(console: Console, found: dict[str, Any], trouble: list[str]) -> None:
    """`bigloop doctor`'s findings (see `bigloop.atoms.models.doctor.facts`)."""
    llama, cpu = found["llama_cpp"], found["cpu"]
    console.print(f"bigloop {found['bigloop']} · Python {found['python']} · {found['machine']}")
    console.print(f"CPU: {shown(cpu['model'])} (tier {cpu['tier']}; AMX: {cpu['amx'] or 'no'})")
    if llama["version"] is None:
        console.print("llama.cpp: not installed (`pip install 'bigloop[local]'`)")
    else:
        console.print(
            f"llama.cpp: llama-cpp-python {llama['version']}, built for "
            f"{llama['variant'] or 'an unknown CPU'}; uses {' '.join(llama['features'])}"
        )
    for m in found["models"]:
        console.print(f"model {m['name']}: {m['state']} · sha256 {m['sha256'][:16]}… · {m['file']}")
    if layers := found.get("python_sandbox", {}).get("layers"):
        console.print(f"run_python sandbox: {'; '.join(layers)}")
        console.print(f"run_python programs run as {found['python_sandbox']['runs_as']}")
    if rates := found.get("rates"):
        console.print(
            f"rates: reads {rates['prompt_tokens_per_s']} tokens/s, writes "
            f"{rates['generation_tokens_per_s']} tokens/s"
        )
    for problem in trouble:
        console.print(f"[bold red]problem:[/] {shown(problem)}")
    if not trouble:
        console.print("[green]ok[/]")


def print_policies(console: Console, rows: list[dict[str, str]]) -> None:
    """`bigloop policies`: one line per policy, grouped by kind."""
    for row in rows:
        console.print(f"[bold]{row['name']}[/] ({row['kind'].replace('_', ' ')}): {row['does']}")


def print_trace(console: Console, result: RunResult, redactor: Redactor | None = None) -> None:
    """A recorded run: its header, every step, the summary (secrets redacted)."""
    redactor = _redactor(redactor)
    result = redactor.result(result)
    console.print(f"[bold]run {result.run_id}[/] · {result.status} · {shown(result.task)}")
    for step in result.steps:
        console.print(step_line(step, redactor))
    console.print(summary_line(result))


def result_json(result: RunResult, redactor: Redactor | None = None) -> dict[str, Any]:
    """A run as JSON-ready data: steps and usage, without the raw messages (secrets
    redacted)."""
    result = _redactor(redactor).result(result)
    data = asdict(result)
    data["usage"]["total_tokens"] = result.usage.total_tokens
    data.pop("messages", None)
    for step in data["steps"]:
        step.pop("message", None)
    return data


def runs_table(runs: Sequence[RunSummary], redactor: Redactor | None = None) -> Table:
    """Recorded runs, one row each (secrets redacted)."""
    from rich.table import Table

    redactor = _redactor(redactor)
    table = Table("run id", "status", "steps", "tools", "tokens", "seconds", "task")
    for r in runs:
        seconds = f"{r.ended_at - r.started_at:.1f}" if r.ended_at else "-"
        table.add_row(
            r.run_id,
            r.status,
            str(r.steps),
            str(r.tool_calls),
            str(r.prompt_tokens + r.completion_tokens),
            seconds,
            shown(redactor.text(r.task), 60),
        )
    return table


def cards_table(cards: Sequence[AtomCard]) -> Table:
    """Atoms' cards, one row each."""
    from rich.table import Table

    table = Table("name", "kind", "privacy", "cost", "latency s", "reliability", "description")
    for c in cards:
        latency = f"{c.latency_s:.3f}" if c.latency_s is not None else "-"
        table.add_row(
            c.name, c.kind, c.privacy, f"{c.cost:g}", latency, f"{c.reliability:.2f}",
            c.description[:70],
        )  # fmt: skip
    return table


def hit_line(hit: Hit) -> str:
    """One registry search result."""
    return f"{hit.rank:>2}. [bold]{hit.card.name}[/] {hit.card.description[:90]}"


def bfcl_markdown(report: dict[str, dict[str, Any]], model_name: str) -> str:
    """The BFCL scoreboard as a markdown table: one row per category and mode."""
    lines = [
        f"BFCL (bfcl-eval 2026.3.23), model: {model_name}",
        "",
        "| category | mode | N | accuracy | valid calls | repaired | asked | p50 s | p95 s "
        "| prompt tok | completion tok | prompt s | generation s | top errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cat, modes in report.items():
        for m, s in modes.items():
            if not s.get("cases"):
                continue
            errors = ", ".join(f"{k} {v}" for k, v in list(s["errors"].items())[:3])
            lines.append(
                f"| {cat} | {m} | {s['cases']} | {s['accuracy']:.0%} | {s['valid_call_rate']:.0%} "
                f"| {s['repaired']} | {s.get('asked', 0)} | {s['p50_s']:.1f} | {s['p95_s']:.1f} "
                f"| {s['prompt_tokens']} "
                f"| {s['completion_tokens']} | {s['prompt_s']:.0f} | {s['generation_s']:.0f} "
                f"| {errors} |"
            )
    return "\n".join(lines) + "\n"
