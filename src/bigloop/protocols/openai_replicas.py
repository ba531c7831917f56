"""`bigloop serve openai --ray ADDRESS --replicas N`: the OpenAI-compatible server of
`bigloop.protocols.openai_server` as a Ray Serve deployment of N replicas.

Each replica is one Ray actor holding one model (one llama.cpp context, decoding on its
share of the CPUs) behind the same FastAPI app as the single-process server: the same
guard (Host and Origin checks, body cap, bearer token), the same answer rules, the same
errors. Ray Serve's HTTP proxy takes the requests on HOST:PORT and routes each to a
replica with room (`max_ongoing_requests`). Every replica records its completions in one
trace store (`--trace-db`: a SQLite file for replicas on one machine, a postgresql://
URL for replicas on several), so `bigloop trace list` and `bigloop ui` see them all.

What is shared and what is per replica, and what breaks first as replicas are added, is
in docs/scaling.md. Needs the 'serve-ray' extra (`ray[serve]`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from bigloop._errors import UserError

APP_NAME = "bigloop-openai"


@dataclass(frozen=True, kw_only=True)
class ReplicaSpec:
    """What every replica builds: picklable data, never a live model or store."""

    model: str = "embedded"
    base_url: str | None = None
    off: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    token: str | None = None
    trace_db: str | None = None
    threads: int | None = None
    """CPU threads of a local model's decoding (None: one per core of the node)."""


class OpenAIReplica:
    """One replica: the model, loaded when Ray starts the actor, and its app."""

    def __init__(self, spec: ReplicaSpec) -> None:
        from bigloop.atoms.models.local import LocalModel
        from bigloop.atoms.models.spec import ModelSpec
        from bigloop.protocols.openai_server import create_app
        from bigloop.trace.store import TraceStore

        model = ModelSpec(name=spec.model, base_url=spec.base_url).build(n_threads=spec.threads)
        if isinstance(model, LocalModel):
            model.llama()  # load the weights now: the replica is ready when it answers
        store = TraceStore(spec.trace_db) if spec.trace_db else None
        self._app = create_app(
            model,
            off=spec.off,
            allowed_hosts=spec.allowed_hosts,
            token=spec.token,
            store=store,
        )

    def __serve_build_asgi_app__(self) -> Any:
        return self._app


def threads_per_replica(replicas: int, cpus: int | None = None) -> int:
    """An even share of this machine's cores for each replica, at least one."""
    return max(1, (cpus or os.cpu_count() or 1) // replicas)


def start_replicas(spec: ReplicaSpec, *, address: str, host: str, port: int, replicas: int) -> None:
    """Connect to the Ray cluster at `address` ("local": start one on this machine), and
    deploy `replicas` replicas serving at http://HOST:PORT/v1; returns once all answer.

    Raises:
        UserError: the 'serve-ray' extra is not installed, or `replicas` is below one.
    """
    if replicas < 1:
        raise UserError(f"--replicas {replicas}: serve at least one replica.")
    try:
        import ray
        from ray import serve
    except ImportError as e:
        raise UserError(
            f"`bigloop serve openai --ray` needs bigloop's 'serve-ray' extra ({e.name} is not "
            "installed): pip install 'ray[serve]'"
        ) from None
    cpus = spec.threads or 1
    if not ray.is_initialized():
        if address == "local":
            ray.init(num_cpus=max(os.cpu_count() or 1, cpus * replicas), include_dashboard=False)
        else:
            ray.init(address=address)
    serve.start(http_options={"host": host, "port": port})
    deployment = serve.deployment(
        name="openai",
        num_replicas=replicas,
        ray_actor_options={"num_cpus": cpus},
        max_ongoing_requests=2 if spec.base_url is None else 16,
    )(serve.ingress()(OpenAIReplica))
    serve.run(deployment.bind(spec), name=APP_NAME, route_prefix="/")


def stop_replicas() -> None:
    """Take the deployment down and shut Serve down (the Ray cluster stays)."""
    from ray import serve

    serve.shutdown()  # type: ignore[no-untyped-call]


def serve_openai_on_ray(
    spec: ReplicaSpec, *, address: str, host: str, port: int, replicas: int
) -> None:
    """Serve until interrupted (`bigloop serve openai --ray`)."""
    start_replicas(spec, address=address, host=host, port=port, replicas=replicas)
    print(f"{replicas} replica(s) of {spec.model} at http://{host}:{port}/v1 (Ctrl-C stops)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stop_replicas()
