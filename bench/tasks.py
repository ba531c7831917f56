"""Real tasks on the embedded model, measured from their traces.

The tasks of tests/real (arithmetic, dates, units, weekday, SQL, files, a custom tool),
each run through `Loop` with a SQLite trace. From each trace: seconds in the model,
prompt/completion tokens, model turns, whether the first tool call was valid, and how
many calls or replies were sent back for repair. The "plain" row is the same model
asked the same task with no tools (one call, the baseline a loop must beat on answers).

    python bench/tasks.py        # writes bench/results/tasks.md
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from bigloop import LocalModel, Loop, ModelSettings, TraceStore, tool
from bigloop.atoms.builtin import calculator, default_tools, file_tools, sqlite_tools

RESULTS = Path(__file__).parent / "results"


@tool
def stock_price(symbol: str) -> float:
    """Latest price of a stock.

    Args:
        symbol: ticker symbol, e.g. "ACME".
    """
    return {"ACME": 12.5}[symbol]


def workspace(root: Path) -> tuple[Path, Path]:
    (root / "ws").mkdir()
    (root / "ws" / "notes.txt").write_text("alpha\nthe secret code is 4721\nbeta\n")
    db = root / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        conn.executemany(
            "INSERT INTO orders (customer, total) VALUES (?, ?)",
            [(c, t) for c, t in zip("abcdefg", range(7), strict=True)],
        )
    return root / "ws", db


def main() -> None:
    model = LocalModel()
    model.llama()
    with tempfile.TemporaryDirectory() as tmp:
        ws, db = workspace(Path(tmp))
        tasks = [
            ("What is (45 + 12) / 3?", default_tools(), "19"),
            ("How many days are there between 2024-01-15 and 2024-03-01?", default_tools(), "46"),
            ("Convert 26.2 miles to kilometers.", default_tools(), "42.16"),
            ("What day of the week was 2024-07-04?", default_tools(), "Thursday"),
            ("How many orders are in the orders table?", default_tools() + sqlite_tools(db), "7"),
            ("What is the secret code written in notes.txt?", file_tools(ws), "4721"),
            ("What do 40 shares of ACME cost?", [stock_price, calculator], "500"),
        ]
        store = TraceStore(Path(tmp) / "traces.db")
        rows = []
        for task, tools, expected in tasks:
            result = Loop(model, tools, store=store).run_sync(task)
            steps = store.steps(result.run_id)
            tool_steps = [s for s in steps if s.kind == "tool"]
            model_steps = [s for s in steps if s.kind == "model"]
            repairs = sum(1 for s in steps if s.error not in (None, "repeated"))
            first_ok = (
                bool(tool_steps) and tool_steps[0].error is None and model_steps[0].error is None
            )
            start = time.perf_counter()
            plain, _ = model.complete_chat(
                [{"role": "user", "content": task}], settings=ModelSettings()
            )
            plain_s = time.perf_counter() - start
            rows.append(
                (
                    task,
                    expected in (result.answer or ""),
                    expected in plain,
                    first_ok,
                    repairs,
                    len(model_steps),
                    sum(s.seconds for s in model_steps),
                    sum(s.prompt_tokens for s in model_steps),
                    sum(s.completion_tokens for s in model_steps),
                    plain_s,
                    " → ".join(s.name for s in tool_steps),
                )
            )
    lines = [
        "Real tasks on the embedded model (Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 2 threads), "
        "from each run's trace. `plain` = the same model asked once without tools.",
        "",
        "| task | loop correct | plain correct | first call valid | repairs | model turns "
        "| model s | prompt tok | completion tok | plain s | tools called |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r[0]} | {'yes' if r[1] else 'no'} | {'yes' if r[2] else 'no'} "
            f"| {'yes' if r[3] else 'no'} | {r[4]} | {r[5]} | {r[6]:.1f} | {r[7]} | {r[8]} "
            f"| {r[9]:.1f} | {r[10]} |"
        )
    n = len(rows)
    lines += [
        "",
        f"Loop correct {sum(r[1] for r in rows)}/{n}; plain correct "
        f"{sum(r[2] for r in rows)}/{n}; first tool call valid {sum(r[3] for r in rows)}/{n}; "
        f"total repairs {sum(r[4] for r in rows)}; median model seconds per task "
        f"{sorted(r[6] for r in rows)[n // 2]:.1f}.",
    ]
    report = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "tasks.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
