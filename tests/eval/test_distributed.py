"""BFCL cases on a Ray cluster started on loopback by the test: the results must match a
single-process run of the same cases on the same model."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bigloop.atoms.models.spec import ModelSpec
from bigloop.eval.bfcl import run_category
from bigloop.eval.bfcl_data import load_cases

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent))
    if ray_cli is None:
        pytest.fail("Ray is not installed in this environment; `make setup` installs it.")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(
        [
            ray_cli,
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        import ray

        ray.shutdown()
        subprocess.run([ray_cli, "stop", "--force"], capture_output=True, timeout=120)


def test_ray_results_match_single_process(cluster: str, tmp_path: Path) -> None:
    cases = load_cases("simple_python", 3)
    spec = ModelSpec()
    local = asyncio.run(run_category(cases, spec.build(), "loop", tmp_path / "local.jsonl"))
    remote = asyncio.run(
        run_category(
            cases, spec.build(), "loop", tmp_path / "ray.jsonl", workers=2, ray=(cluster, spec)
        )
    )
    assert [r.id for r in remote] == [c.id for c in cases]
    assert [(r.valid, r.calls) for r in remote] == [(r.valid, r.calls) for r in local]
    assert len((tmp_path / "ray.jsonl").read_text().splitlines()) == 3
