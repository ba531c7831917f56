"""SQLite limits: a runaway query is stopped at its deadline, results are bounded before
they are built, and a query cannot reach another database file."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from bigloop import Tool, ToolFailure
from bigloop.atoms.builtin import sqlite_tools


def run(tool: Tool, **args: object) -> str:
    return asyncio.run(tool.call(args))


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)")
        db.executemany("INSERT INTO orders (note) VALUES (?)", [("x" * 5000,)] * 300)
    return path


def test_runaway_query_is_stopped_at_its_deadline(shop: Path) -> None:
    _, query = sqlite_tools(shop, timeout_s=1)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"
    start = time.monotonic()
    with pytest.raises(ToolFailure, match=r"ran longer than 1 s and was stopped\. Add a LIMIT"):
        run(query, query=endless)
    assert time.monotonic() - start < 4
    time.sleep(0.2)
    # The work ended too, not only the wait for it.
    assert not [t for t in threading.enumerate() if t.name.startswith("bigloop-tool-sql")]


_HUGE_BLOB = textwrap.dedent(
    """
    import asyncio, resource, sys
    from bigloop.atoms.builtin import sqlite_tools
    _, query = sqlite_tools(sys.argv[1])
    # Linux keeps the parent's high-water mark across fork and exec: measure the growth.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        print(asyncio.run(query.call({"query": "SELECT zeroblob(100000000)"})))
    except Exception as e:
        print(e)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """
)


def test_huge_values_are_refused_before_they_are_built(shop: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _HUGE_BLOB, str(shop)], capture_output=True, text=True, timeout=60
    )
    message, grown_mb = done.stdout.strip().rsplit("\n", 1)
    # Before the fix: a 100 MB blob, its 400 MB repr, 1.1 GB at the peak.
    assert int(grown_mb) < 100, (message, grown_mb)
    assert "would exceed 1000000 bytes" in message


def test_cells_rows_and_result_size_are_capped(shop: Path) -> None:
    _, query = sqlite_tools(shop)
    result = query.fn(query="SELECT id, note FROM orders")
    assert result["truncated"] is True
    assert 1 <= len(result["rows"]) < 200  # stopped by size before the row cap
    assert result["rows"][0][1].endswith("… [4000 more characters]")
    blob = query.fn(query="SELECT x'00ff' AS b, randomblob(100) AS r")
    assert blob["rows"][0][0] == "<blob of 2 bytes: 00ff>"
    assert blob["rows"][0][1].startswith("<blob of 100 bytes: ")
    assert len(query.fn(query="SELECT id FROM orders")["rows"]) == 200


def test_attach_cannot_create_or_read_other_files(shop: Path, tmp_path: Path) -> None:
    _, query = sqlite_tools(shop)
    target = tmp_path / "new.db"
    with pytest.raises(ToolFailure, match="too many attached databases"):
        run(query, query=f"ATTACH 'file:{target}?mode=rwc' AS n")
    with pytest.raises(ToolFailure, match="too many attached databases"):
        run(query, query=f"VACUUM INTO '{target}'")
    assert not target.exists()


def test_wide_tables_still_work(tmp_path: Path) -> None:
    path = tmp_path / "wide.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (" + ", ".join(f"c{i}" for i in range(300)) + ")")
        db.execute("INSERT INTO t (c0) VALUES (1)")
    _, query = sqlite_tools(path)
    assert len(query.fn(query="SELECT * FROM t")["columns"]) == 300
    with pytest.raises(ToolFailure, match="too many columns"):
        run(query, query="SELECT * FROM t a, t b")
