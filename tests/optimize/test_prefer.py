"""The preference step's parts without training a model: pairs recorded through the real
loop where a rival model decides otherwise, the suite's judge of equal decisions, the
GGUF LoRA read back as a peft adapter, and the step's plumbing (training replaced)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from bigloop_eval.suite import Workspace, split
from bigloop_eval.suite_teach import contrast_task

from bigloop import FunctionModel, Loop, ToolSpec, UserError, tool
from bigloop.atoms.models.base import ModelResponse, ToolCall
from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example, Outcome, Split
from bigloop.optimize.evaluate import Evaluator
from bigloop.optimize.finetune import step as step_module
from bigloop.optimize.finetune.export import from_gguf, to_gguf
from bigloop.optimize.finetune.train import LoraSettings, Trained
from bigloop.optimize.finetune.turns import Pair, Recorder, Turn, load_pairs, save_pairs
from bigloop.optimize.optimizer import Optimizer, Tuning

gguf = pytest.importorskip("gguf")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _call(a: int, b: int) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id="c", name="add", arguments={"a": a, "b": b})])


def _equal(remaining: list[ModelResponse], own: ModelResponse) -> bool:
    target = remaining[0]
    return [(c.name, c.arguments) for c in target.tool_calls] == [
        (c.name, c.arguments) for c in own.tool_calls
    ] and target.text == own.text


def test_a_pair_is_recorded_where_the_rival_decides_otherwise() -> None:
    rival_replies = iter([_call(2, 3), ModelResponse(text="6")])
    rival = FunctionModel(lambda messages, tools: next(rival_replies))
    targets = [_call(2, 3), ModelResponse(text="5")]
    recorder = Recorder(targets, source="s", family="f", rival=rival, same=_equal)
    result = Loop(recorder, [add]).run_sync("What is 2 + 3?")
    assert result.answer == "5"  # the run follows the verified targets, not the rival
    assert len(recorder.turns) == 2
    (pair,) = recorder.pairs  # the first turn agreed; the answer did not
    assert pair.chat == recorder.turns[1].chat
    assert json.loads(pair.chosen) == {"answer": "5"}
    assert json.loads(pair.rejected) == {"answer": "6"}
    chosen, rejected = pair.turns()
    assert chosen.chat == rejected.chat and chosen.reply == pair.chosen


def test_pairs_round_trip_and_a_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    pair = Pair(
        chat=[{"role": "user", "content": "q"}], chosen="a", rejected="b", source="s", family="f"
    )
    digest = save_pairs([pair], tmp_path / "p.jsonl")
    assert len(digest) == 64 and load_pairs(tmp_path / "p.jsonl") == [pair]
    (tmp_path / "bad.jsonl").write_text('{"chat": []}\n')
    with pytest.raises(UserError, match="Cannot read preference pairs"):
        load_pairs(tmp_path / "bad.jsonl")


def test_the_suite_judges_decisions_by_their_results_and_its_check(tmp_path: Path) -> None:
    task = next(t for t in split("dev") if t.category == "arithmetic" and t.solve is not None)
    workspace = Workspace.create(tmp_path)
    from bigloop_eval.suite_teach import record_solution

    targets = record_solution(task, workspace)
    assert targets is not None and targets[0].tool_calls
    call = targets[0].tool_calls[0]
    expression = str(call.arguments["expression"])

    def rival(first: ModelResponse, answer: str) -> FunctionModel:
        replies = iter([first, ModelResponse(text=answer)])
        return FunctionModel(lambda messages, tools: next(replies))

    same_value = ModelResponse(
        tool_calls=[ToolCall(id="c", name=call.name, arguments={"expression": f"({expression})"})]
    )
    wrong_value = ModelResponse(
        tool_calls=[ToolCall(id="c", name=call.name, arguments={"expression": "1 + 1"})]
    )
    answer = targets[-1].text
    agreeing = asyncio.run(contrast_task(task, workspace, LoopConfig(), rival(same_value, answer)))
    assert agreeing == []  # another expression with the same result, the same answer
    differing = asyncio.run(
        contrast_task(task, workspace, LoopConfig(), rival(wrong_value, "no idea"))
    )
    assert [json.loads(p.rejected) for p in differing] == [
        {"tool_calls": [{"name": call.name, "arguments": {"expression": "1 + 1"}}]},
        {"answer": "no idea"},
    ]


def test_calls_in_another_order_or_together_are_the_same_decision(tmp_path: Path) -> None:
    from bigloop_eval.suite_teach import record_solution

    workspace = Workspace.create(tmp_path)
    task, targets = next(
        (t, made)
        for t in split("dev")
        if t.solve is not None
        and (made := record_solution(t, workspace)) is not None
        and len(made) >= 3
        and len({c.name for m in made for c in m.tool_calls}) == 1
    )
    calls = [m.tool_calls[0] for m in targets[:-1]]
    swapped = iter([ModelResponse(tool_calls=calls[::-1]), *targets[1:]])
    rival = FunctionModel(lambda messages, tools: next(swapped))
    assert asyncio.run(contrast_task(task, workspace, LoopConfig(), rival)) == []
    bad = ToolCall(id="c", name=calls[0].name, arguments={"nonsense": 1})
    broken = iter([ModelResponse(tool_calls=[bad]), *targets[1:]])
    rival = FunctionModel(lambda messages, tools: next(broken))
    (pair,) = asyncio.run(contrast_task(task, workspace, LoopConfig(), rival))
    assert "nonsense" in pair.rejected  # a call its tool refuses is another decision


def _fake_base(path: Path) -> Path:
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_block_count(2)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_lora_reads_back_as_the_peft_adapter_it_was(tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": 4}))
    rng = np.random.default_rng(0)
    tensors = {
        "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight": rng.random((2, 8)),
        "base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight": rng.random((8, 2)),
        "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight": rng.random((2, 8)),
        "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight": rng.random((8, 2)),
    }
    save_file(
        {k: v.astype(np.float32) for k, v in tensors.items()},
        str(folder / "adapter_model.safetensors"),
    )
    base = _fake_base(tmp_path / "base.gguf")
    back = from_gguf(to_gguf(folder, base, tmp_path / "lora.gguf"), base, tmp_path / "back")
    again = load_file(str(back / "adapter_model.safetensors"))
    assert set(again) == set(tensors)
    for key, value in tensors.items():
        assert np.allclose(again[key], value, atol=1e-3)  # f16 in the GGUF
    config = json.loads((back / "adapter_config.json").read_text())
    assert config["r"] == 2 and config["lora_alpha"] == 4.0
    assert config["target_modules"] == ["down_proj", "q_proj"]
    with pytest.raises(UserError, match="Cannot read the GGUF LoRA"):
        from_gguf(tmp_path / "missing.gguf", base, tmp_path / "x")


class PairsBench:
    """Dev example k is right when k < 2, or when the config has an adapter; every
    failure yields one pair."""

    name = "pairs"

    def examples(self, split: Split) -> list[Example]:
        return [Example(id=f"{split}-{k}", task=f"task {k}") for k in range(4)]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        right = int(example.id.rsplit("-")[1]) < 2 or config.adapter is not None
        return Outcome(example_id=example.id, score=float(right))

    async def turns(self, config: LoopConfig, example: Example) -> list[Turn]:
        return []

    async def pairs(self, config: LoopConfig, example: Example) -> list[Pair]:
        chat = [{"role": "user", "content": example.task}]
        return [Pair(chat=chat, chosen="{}", rejected="[]", source=example.id, family="f")]

    def held_out(self) -> list[str]:
        return []

    def tools(self) -> list[ToolSpec]:
        return []

    def knobs(self) -> list[dict[str, object]]:
        return []


def test_the_step_trains_on_the_failures_pairs_and_keeps_on_dev_gain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[Pair]] = []

    def fake_train(pairs, base, start, folder, settings, progress):  # type: ignore[no-untyped-def]
        seen.append(pairs)
        assert start is None and settings.lora.learning_rate < LoraSettings().learning_rate
        (folder / "adapter").mkdir(parents=True)
        return Trained(
            adapter=folder / "adapter",
            examples=len(pairs),
            skipped=0,
            steps=len(pairs),
            tokens=10,
            seconds=1.0,
            device="cpu",
            dtype="float32",
            losses=[0.7, 0.5],
        )

    def fake_export(adapter: Path, base: Path, out: Path) -> Path:
        out.write_bytes(b"lora")
        return out

    monkeypatch.setattr("bigloop.optimize.finetune.prefer.train_preference", fake_train)
    monkeypatch.setattr("bigloop.optimize.finetune.export.to_gguf", fake_export)
    bench = PairsBench()
    tuning = Tuning(base_gguf=tmp_path / "base.gguf", folder=tmp_path / "ft")
    reflector = FunctionModel(lambda messages, tools: "unused")
    optimizer = Optimizer(
        bench, Evaluator(bench, tmp_path / "e.jsonl"), reflector, steps=["prefer"], tuning=tuning
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert [p.source for p in seen[0]] == ["train-2", "train-3"]  # the probe's failures
    assert result.adapter is not None and result.provenance is not None
    record = result.provenance["prefer"]
    assert record["pairs"] == 2 and record["dev_right"] == 4
    assert (tmp_path / "ft" / "prefer" / "fresh" / "pairs.jsonl").is_file()  # no adapter yet
    assert isinstance(bench, step_module.TeachesPairs)
