"""A real PostgreSQL server for the tests: Debian's binaries, a cluster in a temporary
folder, listening on a free loopback port only, stopped at the end of the session. Never
mocked: where it cannot start (no binaries, no psycopg), the tests that need it are
skipped with the reason. As root, the server runs as the `postgres` user (initdb refuses
root)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.loopback import free_port


def binaries() -> Path | None:
    """The folder of PostgreSQL's server binaries (initdb, pg_ctl), or None."""
    if found := shutil.which("initdb"):
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def problem() -> str | None:
    """Why a server cannot start here (None: it can)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (the 'postgres' extra)"
    if binaries() is None:
        return "PostgreSQL's server binaries are absent (Debian: apt-get install postgresql)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start the server as another user"
    return None


@contextmanager
def server() -> Iterator[str]:
    """A running server; yields the URL of its `postgres` database (user `bigloop`)."""
    bin_dir = binaries()
    assert bin_dir is not None
    root = Path(tempfile.mkdtemp(prefix="bigloop-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)

    run(str(bin_dir / "initdb"), "-D", str(data), "-U", "bigloop", "--auth=trust", "-E", "UTF8")
    options = f"-h 127.0.0.1 -p {port} -k {sockets} -c max_connections=200"
    run(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(root / "log"),
        "-w",
        "start",
    )
    try:
        yield f"postgresql://bigloop@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(url: str) -> str:
    """A new, empty database on the server of `url`; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # a generated name, not input
    return url.rsplit("/", 1)[0] + f"/{name}"
