"""Two revisions of bigloop on the same BFCL cases, on this machine: seconds and accuracy.

Each revision runs `bigloop eval bfcl --mode loop` (the real Loop) from its own git
worktree, with the same venv, llama.cpp build, model and cases, one after the other;
results resume per revision. The table gives each category's accuracy, mean and p50
seconds per case for both, and the ratio head/base, so a speed claim is a ratio from one
machine and one session.

    .venv/bin/python bench/revisions.py --base c8c87e7 -c simple_python -c parallel -n 25

Writes bench/results/revisions/<base>-vs-<head>.md (+ the per-case JSON Lines).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "revisions"


def rev(name: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def worktree(commit: str) -> Path:
    """A checkout of `commit` beside this one (made once)."""
    where = Path(os.environ.get("TMPDIR", "/tmp")) / f"bigloop-{commit}"
    if not where.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(where), commit], cwd=ROOT, check=True
        )
    return where


def run(src: Path, out: Path, categories: list[str], n: int) -> None:
    command = [sys.executable, "-m", "bigloop", "eval", "bfcl", "--mode", "loop", "-n", str(n)]
    for c in categories:
        command += ["-c", c]
    env = {**os.environ, "PYTHONPATH": str(src / "src")}
    subprocess.run([*command, "--out", str(out)], env=env, check=True, cwd=src)


def rows(out: Path, category: str, n: int) -> list[dict[str, object]]:
    files = list(out.glob(f"*/loop/{category}.jsonl"))
    if not files:
        return []
    lines = files[0].read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()][:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--base", required=True, help="The revision to compare against.")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("-c", "--category", action="append", required=True)
    parser.add_argument("-n", "--limit", type=int, default=25)
    args = parser.parse_args()
    base, head = rev(args.base), rev(args.head)
    out = RESULTS / f"{base}-vs-{head}"
    sources = {base: worktree(base), head: ROOT if args.head == "HEAD" else worktree(head)}
    for name in (base, head):
        run(sources[name], out / name, args.category, args.limit)
    lines = [
        f"## bigloop {base} vs {head}: BFCL loop mode, first {args.limit} cases, one machine",
        "",
        f"Command: `.venv/bin/python bench/revisions.py --base {args.base} "
        + " ".join(f"-c {c}" for c in args.category)
        + f" -n {args.limit}` ({os.cpu_count()} cores; the revisions ran one after the other)",
        "",
        f"| category | accuracy {base} | accuracy {head} | mean s {base} | mean s {head} "
        f"| p50 s {base} | p50 s {head} | time {head}/{base} |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in args.category:
        a, b = rows(out / base, c, args.limit), rows(out / head, c, args.limit)
        if not a or not b:
            continue
        sa = [float(str(r["seconds"])) for r in a]
        sb = [float(str(r["seconds"])) for r in b]
        lines.append(
            f"| {c} | {sum(bool(r['valid']) for r in a)}/{len(a)} "
            f"| {sum(bool(r['valid']) for r in b)}/{len(b)} | {statistics.mean(sa):.2f} "
            f"| {statistics.mean(sb):.2f} | {statistics.median(sa):.2f} "
            f"| {statistics.median(sb):.2f} | **{sum(sb) / sum(sa):.2f}x** |"
        )
    text = "\n".join(lines) + "\n"
    (out / "table.md").write_text(text)
    (RESULTS / f"{base}-vs-{head}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
