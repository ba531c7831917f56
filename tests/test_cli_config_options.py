"""The command line's loop options are generated from `LoopConfig`'s fields: the same
flags, help, bounds and defaults on every command that takes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
import typer

from bigloop.cli import RUN_FIELDS, app
from bigloop.cli_parts.config_options import config_options
from bigloop.config import LoopConfig
from tests.test_cli import UNREACHABLE, bigloop


def _command(*path: str) -> Any:
    """The click command (typer's own copy of click) at `path`."""
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.get_command(None, name)
        assert command is not None, name
    return command


def _config_params(command: Any) -> dict[str, Any]:
    return {p.name: p for p in command.params if p.name in LoopConfig.model_fields}


NOT_THE_FIELD: dict[tuple[str, ...], set[str]] = {("eval", "bfcl"): {"clarify"}}
"""Options named like a field that mean something else: BFCL's --clarify is a switch that
lets the multi-turn loop ask (results kept as mode 'loop+clarify')."""


@pytest.mark.parametrize(
    "path",
    [("run",), ("serve", "mcp"), ("serve", "a2a"), ("serve", "openai"), ("eval", "bfcl")],
)
def test_every_loop_option_reads_as_its_config_field(path: tuple[str, ...]) -> None:
    params = _config_params(_command(*path))
    assert {"model", "base_url"} <= set(params)
    for name, param in params.items():
        if name in NOT_THE_FIELD.get(path, set()):
            continue
        assert param.opts[0] == "--" + name.replace("_", "-")
        description = LoopConfig.model_fields[name].description
        assert description and param.help and param.help.startswith(description)


def test_run_takes_each_field_it_lists_with_the_field_s_bounds() -> None:
    params = _config_params(_command("run"))
    assert set(params) == {*RUN_FIELDS, "trace_db"}  # --trace-db: the shared option
    vote = params["vote"]
    assert (vote.min, vote.max) == (1, 9)
    assert params["tools"].multiple and params["off"].multiple


def test_options_left_out_leave_the_config_s_defaults_and_lists_take_commas(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "saved.json"
    done = bigloop(
        "run",
        "hi",
        "-m",
        "m",
        "--base-url",
        UNREACHABLE,
        "--tools",
        "calculator,today",
        "--tools",
        "weekday",
        "--save-config",
        str(saved),
        home=tmp_path,
    )
    assert done.returncode == 1, done.stderr  # the server is not there
    expected = LoopConfig(model="m", base_url=UNREACHABLE, tools=["calculator", "today", "weekday"])
    assert LoopConfig.load(saved) == expected


def test_a_value_out_of_the_field_s_bounds_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    done = bigloop("run", "hi", "--vote", "10", home=tmp_path)
    assert done.returncode == 2 and "less than or equal to 9" in done.stderr


def test_a_command_without_a_given_parameter_or_an_unknown_field_is_a_developer_error() -> None:
    with pytest.raises(ValueError, match="not LoopConfig fields"):
        config_options("modle")

    def no_given(task: str) -> None: ...

    with pytest.raises(TypeError, match="no `given` parameter"):
        config_options("model")(no_given)


def test_the_command_gets_only_the_options_given() -> None:
    seen: list[dict[str, Any]] = []

    @config_options("model", "vote", "python", "off")
    def command(*, given: dict[str, Any]) -> None:
        seen.append(given)

    cast(Any, command)(model=None, vote=3, python=False, off=["clarify,rank_tools"])
    assert seen == [{"vote": 3, "off": ["clarify", "rank_tools"]}]
