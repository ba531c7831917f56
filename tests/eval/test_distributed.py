"""BFCL cases on a Ray cluster started on loopback by the test: the results must match a
single-process run of the same cases on the same model."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bigloop_eval.bfcl import run_category
from bigloop_eval.bfcl_data import load_cases

from bigloop.atoms.models.spec import ModelSpec
from tests.loopback import free_port

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Ray head on this machine, without token authentication: Ray turns that on when it
    finds a token in ~/.ray (a `ray.init()` of a local cluster leaves one), and a client
    joining by address then is refused unless it sets RAY_AUTH_MODE=token."""
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent))
    if ray_cli is None:
        pytest.fail("Ray is not installed in this environment; `make setup` installs it.")
    port = free_port()
    mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # the head (started from here) and this client
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
        if mode is None:
            del os.environ["RAY_AUTH_MODE"]
        else:
            os.environ["RAY_AUTH_MODE"] = mode


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


def test_the_optimizers_evaluations_fan_out_over_ray(cluster: str, tmp_path: Path) -> None:
    """`bigloop optimize --ray`: a config's evaluations on Ray workers score as here."""
    from bigloop_eval.benches import build_bench
    from bigloop_eval.distributed import RayBenchRunner

    from bigloop.config import LoopConfig
    from bigloop.optimize.evaluate import Evaluator
    from bigloop.trace.store import TraceStore

    described = {"bench": "bfcl", "category": "simple_python", "train": 2, "dev": 2, "test": 1}
    spec = ModelSpec()
    bench = build_bench(described, spec.build(), TraceStore(tmp_path / "t.db"))
    runner = RayBenchRunner(cluster, spec, described, workers=2)
    dev = bench.examples("dev")
    remote = asyncio.run(
        Evaluator(bench, tmp_path / "ray.jsonl", runner=runner).score(LoopConfig(), dev)
    )
    local = asyncio.run(Evaluator(bench, tmp_path / "local.jsonl").score(LoopConfig(), dev))
    assert list(remote.outcomes) == [e.id for e in dev]
    assert [o.score for o in remote.outcomes.values()] == [o.score for o in local.outcomes.values()]
    assert all(o.run_id and o.model_calls >= 1 for o in remote.outcomes.values())
    assert len((tmp_path / "ray.jsonl").read_text().splitlines()) == 2
