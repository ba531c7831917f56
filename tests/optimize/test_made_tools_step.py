"""The optimizer's tools step on a bench whose scores follow the config by rule: a tool is
asked for each training failure with its right answer, accepted ones go to the library,
and the loop with the library is kept only when dev rises (plumbing: the maker is
scripted; what a real maker achieves is bench/results/made_tools/'s to say)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bigloop import FunctionModel, Message, ToolSpec
from bigloop.atoms.builtin._confine import SandboxUnavailable, boundary
from bigloop.atoms.made import ToolLibrary
from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example, Outcome, Split
from bigloop.optimize.evaluate import Evaluator, fingerprint
from bigloop.optimize.optimizer import Optimizer

try:
    boundary()
except SandboxUnavailable as e:  # made tools run only in the sandbox
    pytest.skip(f"no sandbox here: {e}", allow_module_level=True)


class TaxBench:
    """'What do I pay for $A plus P% tax?': right only with a tool library (by rule)."""

    name = "tax"

    def __init__(self) -> None:
        self.asked: list[str] = []
        self._examples = {
            s: [
                Example(id=f"{s}-{k}", task=f"What do I pay for ${100 * k} plus 10% tax?")
                for k in (1, 2)
            ]
            for s in ("train", "dev", "test")
        }

    def examples(self, split: Split) -> list[Example]:
        return self._examples[split]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        return Outcome(example_id=example.id, score=float(config.tools_dir is not None))

    def tools(self) -> list[ToolSpec]:
        return []

    def knobs(self) -> list[dict[str, object]]:
        return []

    def reference(self, example: Example) -> str | None:
        self.asked.append(example.id)
        return str(110 * int(example.id[-1]))

    def accepts(self, example: Example, answer: str) -> bool:
        return float(answer) == 110 * int(example.id[-1])


def maker() -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        amount = int(messages[-1].content.split("$")[1].split(" ")[0])
        return json.dumps(
            {
                "name": f"with_tax_{amount}",
                "description": "An amount plus a tax percentage of it.",
                "parameters": {"type": "object", "properties": {}},
                "source": f"def with_tax_{amount}(amount, percent):\n"
                "    return round(amount * (1 + percent / 100), 2)\n",
                "arguments": {"amount": amount, "percent": 10},
            }
        )

    return FunctionModel(reply, name="maker")


def optimized(bench: TaxBench, folder: Path, evals: Path) -> LoopConfig:
    optimizer = Optimizer(
        bench, Evaluator(bench, evals), maker(), steps=["tools"], tools_folder=folder
    )
    return asyncio.run(optimizer.run(LoopConfig()))


def test_the_tools_step_makes_a_tool_per_failure_and_keeps_the_library(tmp_path: Path) -> None:
    bench = TaxBench()
    folder = tmp_path / "loop.tools"
    result = optimized(bench, folder, tmp_path / "evals.jsonl")
    assert result.tools_dir == str(folder)
    assert [m.name for m in ToolLibrary(folder).made()] == ["with_tax_100", "with_tax_200"]
    made = result.provenance["tools"]  # type: ignore[index]
    assert made["asked"] == 2 and made["accepted"] == 2
    assert result.provenance["dev_after"] == 1.0  # type: ignore[index]
    # a rerun asks nothing again: the library holds a tool for each failure already
    bench.asked.clear()
    optimized(bench, folder, tmp_path / "evals2.jsonl")
    assert bench.asked == []


def test_a_librarys_contents_are_part_of_the_fingerprint(tmp_path: Path) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    config = LoopConfig(tools_dir=str(folder))
    before = fingerprint(config)
    (folder / "f.v1.json").write_text("{}")
    assert fingerprint(config) != before
