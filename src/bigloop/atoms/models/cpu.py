"""Which instruction sets llama.cpp is built for: chosen from the CPU, never "native".

llama.cpp's default build (`GGML_NATIVE=ON`, `-march=native`) bakes in whatever the build
machine has, AMX included, and ggml's AMX path crashes with SIGILL on machines where Linux
grants AMX tile state per thread (llama.cpp PR #26954). So `scripts/setup.sh` builds with
`GGML_NATIVE=OFF` and names every instruction set itself, from the tier this module picks
out of `/proc/cpuinfo`; the choice is recorded beside the venv, and a machine that lacks a
recorded feature rebuilds instead of crashing. AMX stays off on every tier.

This file needs only the standard library: setup runs it with the system Python before
bigloop is installed (`python3 src/bigloop/atoms/models/cpu.py --cmake-args`).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

# The ggml options this module sets, each with the /proc/cpuinfo flag(s) it needs. With
# GGML_NATIVE=OFF ggml turns SSE4.2/AVX/AVX2/BMI2/FMA/F16C on unless told otherwise, so
# every option is passed explicitly, ON or OFF.
_OPTIONS: dict[str, tuple[str, ...]] = {
    "GGML_SSE42": ("sse4_2",),
    "GGML_AVX": ("avx",),
    "GGML_F16C": ("f16c",),
    "GGML_FMA": ("fma",),
    "GGML_BMI2": ("bmi2",),
    "GGML_AVX2": ("avx2",),
    "GGML_AVX_VNNI": ("avx_vnni",),
    "GGML_AVX512": ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
    "GGML_AVX512_VBMI": ("avx512vbmi",),
    "GGML_AVX512_VNNI": ("avx512_vnni",),
    "GGML_AVX512_BF16": ("avx512_bf16",),
}
_NEVER = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")

# Tiers from the most capable down: a tier is taken when the CPU has all its options;
# the extras of a tier are added one by one where the CPU has them.
_TIERS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "avx512",
        (
            "GGML_SSE42",
            "GGML_AVX",
            "GGML_F16C",
            "GGML_FMA",
            "GGML_BMI2",
            "GGML_AVX2",
            "GGML_AVX512",
        ),
        ("GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16", "GGML_AVX_VNNI"),
    ),
    (
        "avx2",
        ("GGML_SSE42", "GGML_AVX", "GGML_F16C", "GGML_FMA", "GGML_BMI2", "GGML_AVX2"),
        ("GGML_AVX_VNNI",),
    ),
    ("avx", ("GGML_SSE42", "GGML_AVX"), ("GGML_F16C",)),
    ("sse42", ("GGML_SSE42",), ()),
    ("x86-64", (), ()),
)

# What `llama_print_system_info()` names each option's feature ("AVX512 = 1").
_REPORTED: dict[str, str] = {
    "SSE3": "pni",  # /proc/cpuinfo's name for SSE3
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "AVX_VNNI": "avx_vnni",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}

# ARM tiers: the -march extensions ggml gets (GGML_CPU_ARM_ARCH), each with the flag
# Linux's /proc/cpuinfo ("Features") or macOS's sysctl (hw.optional.arm.FEAT_*) gives it.
_ARM_EXTENSIONS: tuple[tuple[str, str], ...] = (
    ("dotprod", "asimddp"),
    ("i8mm", "i8mm"),
    ("sve", "sve"),
)
_ARM_BASE = "armv8.2-a"
_ARM_MACHINES = ("aarch64", "arm64")

# macOS's names (sysctl machdep.cpu.features / leaf7_features, hw.optional.arm.FEAT_*)
# for the flags /proc/cpuinfo spells otherwise.
_MAC_NAMES = {
    "sse4.2": "sse4_2",
    "avx1.0": "avx",
    "avx512vnni": "avx512_vnni",
    "avx512bf16": "avx512_bf16",
    "feat_dotprod": "asimddp",
    "feat_i8mm": "i8mm",
    "feat_sve": "sve",
}

RECORD_NAME = "bigloop-llama-build.json"


@dataclass(kw_only=True, frozen=True)
class Variant:
    """One llama.cpp build: its tier, the options it turns on, and the CPU flags they need."""

    name: str
    machine: str
    options: tuple[str, ...] = ()
    needs: tuple[str, ...] = field(default=())

    metal: bool = False

    def cmake_args(self) -> list[str]:
        """The CMake arguments that build exactly this variant."""
        args = ["-DGGML_NATIVE=OFF"]
        if self.machine in ("x86_64", "amd64"):
            args += [f"-D{o}={'ON' if o in self.options else 'OFF'}" for o in _OPTIONS]
            args += [f"-D{o}=OFF" for o in _NEVER]
        elif self.machine in _ARM_MACHINES:
            arch = "+".join([_ARM_BASE, *self.options])
            args.append(f"-DGGML_CPU_ARM_ARCH={arch}")
        if self.machine in _ARM_MACHINES or self.metal:
            args.append(f"-DGGML_METAL={'ON' if self.metal else 'OFF'}")
        return args

    def missing(self, flags: set[str]) -> list[str]:
        """The CPU flags this variant needs that `flags` lacks."""
        return sorted(set(self.needs) - flags)


def cpu_flags(cpuinfo: str | None = None, *, sysctl: str | None = None) -> set[str]:
    """The instruction-set flags of this machine's first CPU: `/proc/cpuinfo` on Linux,
    `sysctl` on macOS (`sysctl machdep.cpu hw.optional`; its names mapped to Linux's)."""
    if sysctl is not None:
        return mac_flags(sysctl)
    if cpuinfo is None:
        if platform.system() == "Darwin":
            return mac_flags(_sysctl())
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def mac_flags(sysctl: str) -> set[str]:
    """The CPU flags in `sysctl machdep.cpu hw.optional` output, in Linux's names: Intel
    Macs list them in `machdep.cpu.features` / `leaf7_features`; Apple silicon sets
    `hw.optional.arm.FEAT_X: 1`."""
    flags: set[str] = set()
    for line in sysctl.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("machdep.cpu.features", "machdep.cpu.leaf7_features"):
            flags |= {_MAC_NAMES.get(f.lower(), f.lower()) for f in value.split()}
        elif key.startswith("hw.optional.arm.") and value.strip() == "1":
            name = key.removeprefix("hw.optional.arm.").lower()
            flags.add(_MAC_NAMES.get(name, name))
    return flags


def _sysctl() -> str:
    """`sysctl machdep.cpu hw.optional`'s output ('' where it cannot run)."""
    import subprocess

    try:
        out = subprocess.run(
            ["sysctl", "machdep.cpu", "hw.optional"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout


def choose(flags: set[str], machine: str | None = None, system: str | None = None) -> Variant:
    """The most capable tier whose instruction sets all of `flags` has; never AMX. ARM gets
    armv8.2-a plus the dotprod / i8mm / SVE extensions the CPU has; Apple silicon adds
    Metal."""
    machine = (machine or platform.machine()).lower()
    system = system or platform.system()
    if machine in _ARM_MACHINES:
        options = tuple(ext for ext, flag in _ARM_EXTENSIONS if flag in flags)
        metal = system == "Darwin"
        name = "-".join(["apple-metal" if metal else "armv8.2", *options])
        needs = tuple(sorted(flag for ext, flag in _ARM_EXTENSIONS if ext in options))
        return Variant(name=name, machine=machine, options=options, needs=needs, metal=metal)
    if machine not in ("x86_64", "amd64"):
        return Variant(name=f"{machine}-generic", machine=machine)
    for name, required, extras in _TIERS:
        if all(set(_OPTIONS[o]) <= flags for o in required):
            options = required + tuple(o for o in extras if set(_OPTIONS[o]) <= flags)
            needs = tuple(sorted({f for o in options for f in _OPTIONS[o]}))
            return Variant(name=name, machine=machine, options=options, needs=needs)
    raise AssertionError("the last tier needs nothing")  # pragma: no cover


def reported_features(system_info: str) -> set[str]:
    """The CPU flags a built llama.cpp says it uses, from `llama_print_system_info()`."""
    found = set()
    for part in system_info.split("|"):
        key, _, value = part.partition("=")
        key = key.rpartition(":")[2].strip()  # the first one reads "CPU : SSE3 = 1"
        if value.strip() == "1" and key in _REPORTED:
            found.add(_REPORTED[key])
    return found


def record_path(prefix: str | None = None) -> Path:
    """Where setup records the variant it built: inside the venv."""
    return Path(prefix or sys.prefix) / RECORD_NAME


def recorded(prefix: str | None = None) -> Variant | None:
    """The variant setup built into this venv, or None if it recorded none."""
    try:
        data = json.loads(record_path(prefix).read_text())
    except (OSError, ValueError):
        return None
    return Variant(
        name=data["name"],
        machine=data["machine"],
        options=tuple(data["options"]),
        needs=tuple(data["needs"]),
        metal=bool(data.get("metal", False)),
    )


def check_this_machine(prefix: str | None = None) -> str | None:
    """Why the built llama.cpp would not run here (a fix included), or None when it would."""
    variant = recorded(prefix)
    if variant is None:
        return None
    missing = variant.missing(cpu_flags())
    if not missing:
        return None
    return (
        f"llama.cpp in this venv was built for the '{variant.name}' CPU tier, but this CPU "
        f"lacks {', '.join(missing)}; rebuild it for this machine with `make setup` "
        f"(or `bash scripts/setup.sh`)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--flags", help="assume these CPU flags instead of /proc/cpuinfo's")
    parser.add_argument("--machine", help="assume this machine (uname -m)")
    parser.add_argument("--system", help="assume this system (uname -s: Linux, Darwin)")
    parser.add_argument("--cmake-args", action="store_true", help="print the CMake arguments")
    parser.add_argument("--record", metavar="PREFIX", help="write the choice into this venv")
    args = parser.parse_args(argv)
    flags = set(args.flags.replace(",", " ").split()) if args.flags is not None else cpu_flags()
    variant = choose(flags, args.machine, args.system)
    if args.record:
        record_path(args.record).write_text(json.dumps(asdict(variant)) + "\n")
    if args.cmake_args:
        print(" ".join(variant.cmake_args()))
    else:
        print(json.dumps(asdict(variant)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
