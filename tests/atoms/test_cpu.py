from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bigloop.atoms.models import cpu

SCRIPT = Path(cpu.__file__)
AVX2_MACHINE = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma bmi2 avx2 popcnt"
AMX_MACHINE = (
    f"{AVX2_MACHINE} avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi avx512_vnni "
    "avx512_bf16 avx_vnni amx_tile amx_int8 amx_bf16"
)


def options(args: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("-D").split("=") for a in args)


def test_a_machine_without_avx512_gets_the_avx2_build() -> None:
    variant = cpu.choose(set(AVX2_MACHINE.split()), "x86_64")
    args = options(variant.cmake_args())
    assert variant.name == "avx2"
    assert args["GGML_NATIVE"] == "OFF"
    assert args["GGML_AVX2"] == args["GGML_FMA"] == args["GGML_F16C"] == "ON"
    assert args["GGML_AVX512"] == args["GGML_AVX512_VNNI"] == args["GGML_AVX_VNNI"] == "OFF"
    assert set(variant.needs) <= set(AVX2_MACHINE.split())


def test_amx_is_never_built_even_where_the_cpu_has_it() -> None:
    variant = cpu.choose(set(AMX_MACHINE.split()), "x86_64")
    args = options(variant.cmake_args())
    assert variant.name == "avx512"
    assert args["GGML_AMX_TILE"] == args["GGML_AMX_INT8"] == args["GGML_AMX_BF16"] == "OFF"
    assert args["GGML_NATIVE"] == "OFF"
    assert not any(n.startswith("amx") for n in variant.needs)


def test_every_option_is_named_so_ggml_turns_nothing_on_by_itself() -> None:
    # With GGML_NATIVE=OFF ggml turns AVX/AVX2/FMA/F16C/BMI2 on unless told otherwise.
    args = options(cpu.choose(set(), "x86_64").cmake_args())
    assert cpu.choose(set(), "x86_64").name == "x86-64"
    assert {k for k, v in args.items() if v == "ON"} == set()


def test_an_avx512_machine_without_vbmi_leaves_vbmi_off() -> None:
    flags = set(AMX_MACHINE.split()) - {"avx512vbmi"}
    args = options(cpu.choose(flags, "x86_64").cmake_args())
    assert args["GGML_AVX512"] == "ON" and args["GGML_AVX512_VBMI"] == "OFF"


GRAVITON3_CPUINFO = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm \
jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs \
paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
CPU implementer\t: 0x41
"""
RASPBERRY_PI4_CPUINFO = """processor\t: 0
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
"""
APPLE_M2_SYSCTL = """machdep.cpu.brand_string: Apple M2
hw.optional.arm.FEAT_DotProd: 1
hw.optional.arm.FEAT_I8MM: 1
hw.optional.arm.FEAT_SVE: 0
hw.optional.floatingpoint: 1
"""
INTEL_MAC_SYSCTL = """machdep.cpu.brand_string: Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz
machdep.cpu.features: FPU VME SSE SSE2 SSE3 SSSE3 FMA SSE4.1 SSE4.2 POPCNT AVX1.0 F16C
machdep.cpu.leaf7_features: SMEP BMI1 AVX2 BMI2 ERMS
"""


def test_arm_linux_gets_the_extensions_its_cpu_has() -> None:
    graviton = cpu.choose(cpu.cpu_flags(GRAVITON3_CPUINFO), "aarch64", "Linux")
    assert graviton.name == "armv8.2-dotprod-i8mm-sve"
    assert "-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+i8mm+sve" in graviton.cmake_args()
    assert graviton.missing(cpu.cpu_flags(RASPBERRY_PI4_CPUINFO)) == ["asimddp", "i8mm", "sve"]
    pi = cpu.choose(cpu.cpu_flags(RASPBERRY_PI4_CPUINFO), "aarch64", "Linux")
    assert pi.name == "armv8.2" and pi.cmake_args() == [
        "-DGGML_NATIVE=OFF",
        "-DGGML_CPU_ARM_ARCH=armv8.2-a",
        "-DGGML_METAL=OFF",
    ]


def test_apple_silicon_gets_metal_and_its_extensions_from_sysctl() -> None:
    m2 = cpu.choose(cpu.cpu_flags(sysctl=APPLE_M2_SYSCTL), "arm64", "Darwin")
    assert m2.name == "apple-metal-dotprod-i8mm" and m2.metal
    assert "-DGGML_METAL=ON" in m2.cmake_args()


def test_an_intel_mac_gets_its_tier_from_sysctl_not_the_baseline() -> None:
    flags = cpu.cpu_flags(sysctl=INTEL_MAC_SYSCTL)
    assert {"avx", "avx2", "fma", "f16c", "bmi2", "sse4_2"} <= flags
    assert cpu.choose(flags, "x86_64", "Darwin").name == "avx2"


def test_other_architectures_build_generic() -> None:
    variant = cpu.choose({"vx"}, "s390x")
    assert variant.name == "s390x-generic"
    assert variant.cmake_args() == ["-DGGML_NATIVE=OFF"]


def test_setup_runs_the_module_as_a_script_with_assumed_flags(tmp_path: Path) -> None:
    # scripts/setup.sh runs exactly this, with BIGLOOP_CPU_FLAGS as --flags.
    run = [sys.executable, str(SCRIPT), "--flags", AVX2_MACHINE]
    printed = subprocess.run([*run, "--cmake-args"], capture_output=True, text=True, check=True)
    assert "-DGGML_AVX2=ON" in printed.stdout and "-DGGML_AVX512=OFF" in printed.stdout
    subprocess.run([*run, "--record", str(tmp_path)], capture_output=True, check=True)
    assert json.loads((tmp_path / cpu.RECORD_NAME).read_text())["name"] == "avx2"
    assert cpu.recorded(str(tmp_path)) == cpu.choose(set(AVX2_MACHINE.split()), "x86_64")


def test_a_venv_built_for_more_than_this_cpu_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    variant = cpu.Variant(name="future", machine="x86_64", options=(), needs=("avx1024",))
    (tmp_path / cpu.RECORD_NAME).write_text(json.dumps(variant.__dict__))
    problem = cpu.check_this_machine(str(tmp_path))
    assert problem is not None and "avx1024" in problem and "make setup" in problem
    assert cpu.check_this_machine(str(tmp_path / "none")) is None


def test_system_info_is_read_into_cpu_flags() -> None:
    info = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | AVX512 = 1 | AMX_INT8 = 0"
    assert cpu.reported_features(info) == {"pni", "avx", "avx2", "f16c", "fma", "avx512f"}
    assert "amx_int8" in cpu.reported_features("CPU : AMX_INT8 = 1 | ")


def test_cpuinfo_flags_are_read_from_the_first_cpu() -> None:
    text = "processor\t: 0\nflags\t\t: fpu avx avx2\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    assert cpu.cpu_flags(text) == {"fpu", "avx", "avx2"}


ROOT = Path(__file__).resolve().parents[2]


def setup_variant(flags: str) -> tuple[str, dict[str, str]]:
    """What `scripts/setup.sh` would build on a machine with `flags`."""
    import os

    shown = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup.sh"), "--variant"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "BIGLOOP_CPU_FLAGS": flags},
    ).stdout.split()
    return shown[0], options(shown[1:])


def test_setup_builds_avx2_where_avx512_is_absent_and_never_native_or_amx() -> None:
    name, args = setup_variant(AVX2_MACHINE)
    assert name == "avx2"
    assert args["GGML_NATIVE"] == "OFF" and args["GGML_AVX512"] == "OFF"
    assert args["GGML_AMX_INT8"] == "OFF" and args["GGML_AVX2"] == "ON"
    name, args = setup_variant(AMX_MACHINE)
    assert name == "avx512" and args["GGML_AMX_TILE"] == "OFF"
