"""The llama.cpp this checkout built: never more than this CPU has, never AMX."""

from __future__ import annotations

import pytest

from bigloop.atoms.models import cpu

pytestmark = pytest.mark.real


def test_every_feature_the_built_llama_cpp_uses_is_one_this_cpu_lists() -> None:
    import llama_cpp

    info = bytes(llama_cpp.llama_print_system_info()).decode()
    used = cpu.reported_features(info)
    assert used, info
    assert used <= cpu.cpu_flags(), f"built for features this CPU lacks: {info}"
    assert "amx_int8" not in used, f"AMX is built in: {info}"


def test_setup_recorded_the_variant_it_built_and_this_cpu_has_what_it_needs() -> None:
    variant = cpu.recorded()
    assert variant is not None, "scripts/setup.sh records the CPU variant it built"
    assert variant.missing(cpu.cpu_flags()) == []
    assert cpu.check_this_machine() is None
