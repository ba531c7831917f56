"""The finetune step's parts without training a model: turns recorded through the real
loop, BFCL targets verified by BFCL's checker, the GGUF export of an adapter, the
adapter in LoopConfig, and the step's accept-on-dev rule (training replaced)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_teach import NEVER_TRAINED, TRAINABLE, target, teach

from bigloop import FunctionModel, Loop, ToolSpec, UserError, tool
from bigloop._errors import WeightsError
from bigloop.atoms.models.base import ModelResponse, ToolCall
from bigloop.atoms.models.spec import ModelSpec
from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example, Outcome, Split
from bigloop.optimize.evaluate import Evaluator
from bigloop.optimize.finetune import step as step_module
from bigloop.optimize.finetune.export import to_gguf
from bigloop.optimize.finetune.train import LoraSettings, Trained
from bigloop.optimize.finetune.turns import Recorder, Turn, load_turns, ngrams, overlap, save_turns
from bigloop.optimize.optimizer import Optimizer, Tuning

gguf = pytest.importorskip("gguf")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_recorded_turn_is_the_prompt_the_loop_sent_and_the_target_reply() -> None:
    call = ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})
    recorder = Recorder(
        [ModelResponse(tool_calls=[call]), ModelResponse(text="5")], source="s", family="f"
    )
    result = Loop(recorder, [add]).run_sync("What is 2 + 3?")
    assert result.answer == "5"
    first, second = recorder.turns
    assert first.chat[0]["role"] == "system" and "add" in first.chat[0]["content"]
    assert first.chat[-1] == {"role": "user", "content": "What is 2 + 3?"}
    assert json.loads(first.reply) == {
        "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]
    }
    assert "-> 5" in second.chat[-1]["content"]  # the results turn, as the loop renders it
    assert json.loads(second.reply) == {"answer": "5"}
    assert first.request == "What is 2 + 3?"


def test_a_call_to_a_tool_the_loop_did_not_offer_is_never_taught() -> None:
    call = ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})
    targets = [ModelResponse(tool_calls=[call]), ModelResponse(text="5")]
    recorder = Recorder(targets, source="s", family="f")
    # a request about nothing the tool does: the relevance gate offers no tools
    Loop(recorder, [add]).run_sync("Tell me about the history of the famous Roman emperors")
    assert recorder.turns == [] and recorder.unoffered == "add"


def test_turns_round_trip_and_a_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    turns = [Turn(chat=[{"role": "user", "content": "hi"}], reply="{}", source="a", family="b")]
    digest = save_turns(turns, tmp_path / "t.jsonl")
    assert load_turns(tmp_path / "t.jsonl") == turns and len(digest) == 64
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(UserError, match="Cannot read training turns"):
        load_turns(tmp_path / "bad.jsonl")


def test_near_copies_are_measured_by_word_ngrams() -> None:
    held = ngrams("find the weather in Paris for the next five days please")
    assert overlap("find the weather in Paris for the next five days please", held) == 1.0
    assert overlap("book a table for two at an Italian place near the station", held) == 0.0


def test_bfcl_targets_pass_bfcl_checker_through_the_loop() -> None:
    for category in ("simple_python", "parallel", "irrelevance"):
        case = load_cases(category)[100]
        turns = asyncio.run(teach(case, LoopConfig()))
        assert len(turns) == 1, case.id
        assert turns[0].family == category and turns[0].source == case.id
        reply = json.loads(turns[0].reply)
        assert ("answer" in reply) == (category == "irrelevance")


def test_a_test_case_or_held_out_category_is_never_taught() -> None:
    assert not set(TRAINABLE) & set(NEVER_TRAINED)
    with pytest.raises(UserError, match="may not be trained on"):
        asyncio.run(teach(load_cases("simple_python")[5], LoopConfig()))
    with pytest.raises(UserError, match="may not be trained on"):
        asyncio.run(teach(load_cases("live_multiple")[150], LoopConfig()))


def test_an_optional_value_is_given_only_when_the_request_states_it() -> None:
    case = next(
        c
        for c in load_cases("simple_python")[100:]
        if any("" in v for a in c.answer or [] for opts in a.values() for v in opts.values())
    )
    assert case.answer is not None
    (_name, options), *_ = case.answer[0].items()
    args = target(case).tool_calls[0].arguments
    request = case.messages[-1]["content"].lower()
    for key, allowed in options.items():
        if "" in allowed and not any(str(v).lower() in request for v in allowed if v != ""):
            assert key not in args


def _fake_base(path: Path) -> Path:
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_block_count(2)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _fake_adapter(folder: Path) -> Path:
    from safetensors.numpy import save_file

    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": 4}))
    prefix = "base_model.model.model.layers.1.self_attn.q_proj"
    save_file(
        {
            f"{prefix}.lora_A.weight": np.ones((2, 8), dtype=np.float32),
            f"{prefix}.lora_B.weight": np.ones((8, 2), dtype=np.float32),
        },
        str(folder / "adapter_model.safetensors"),
    )
    return folder


def test_an_adapter_exports_as_llama_cpp_gguf_lora(tmp_path: Path) -> None:
    base = _fake_base(tmp_path / "base.gguf")
    out = to_gguf(_fake_adapter(tmp_path / "adapter"), base, tmp_path / "lora.gguf")
    reader = gguf.GGUFReader(out)
    fields = {k: reader.fields[k] for k in ("general.type", "adapter.type", "adapter.lora.alpha")}
    assert bytes(fields["general.type"].parts[-1]).decode() == "adapter"
    assert bytes(fields["adapter.type"].parts[-1]).decode() == "lora"
    assert float(fields["adapter.lora.alpha"].parts[-1][0]) == 4.0
    tensors = {t.name: t for t in reader.tensors}
    assert set(tensors) == {"blk.1.attn_q.weight.lora_a", "blk.1.attn_q.weight.lora_b"}
    assert list(tensors["blk.1.attn_q.weight.lora_a"].shape) == [8, 2]  # ggml order: in, r


def test_an_unreadable_adapter_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="Cannot read the adapter"):
        to_gguf(tmp_path, _fake_base(tmp_path / "base.gguf"), tmp_path / "x.gguf")


def test_the_config_checks_its_adapter(tmp_path: Path) -> None:
    (tmp_path / "a.gguf").write_bytes(b"adapter")
    (tmp_path / "tuned.json").write_text(json.dumps({"adapter": "a.gguf"}))
    config = LoopConfig.load(tmp_path / "tuned.json")
    assert config.adapter == str((tmp_path / "a.gguf").resolve())  # beside its config
    assert config.checked_adapter() == config.adapter
    wrong = config.model_copy(update={"adapter_sha256": "0" * 64})
    with pytest.raises(UserError, match="not the adapter this config was made with"):
        wrong.checked_adapter()
    with pytest.raises(UserError, match="does not exist"):
        LoopConfig(adapter=str(tmp_path / "missing.gguf")).checked_adapter()
    with pytest.raises(UserError, match="local model"):
        ModelSpec(name="gpt", base_url="http://127.0.0.1:1/v1", adapter="a.gguf").build()


class TurnsBench:
    """Dev example k is right when k < 2, or when the config has an adapter."""

    name = "turns"

    def examples(self, split: Split) -> list[Example]:
        return [Example(id=f"{split}-{k}", task=f"task {k}") for k in range(4)]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        right = int(example.id.rsplit("-")[1]) < 2 or config.adapter is not None
        return Outcome(
            example_id=example.id,
            score=float(right),
            critique="" if right else "BFCL checker: value_error:others: wrong k",
        )

    async def turns(self, config: LoopConfig, example: Example) -> list[Turn]:
        chat = [{"role": "user", "content": example.task}]
        return [Turn(chat=chat, reply="{}", source=example.id, family="f")]

    def held_out(self) -> list[str]:
        return []

    def tools(self) -> list[ToolSpec]:
        return []

    def knobs(self) -> list[dict[str, object]]:
        return []


def test_the_step_keeps_the_adapter_only_on_dev_gain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained: list[list[Turn]] = []

    def fake_train(turns, base, folder, settings, progress):  # type: ignore[no-untyped-def]
        trained.append(turns)
        (folder / "adapter").mkdir(parents=True)
        return Trained(
            adapter=folder / "adapter",
            examples=len(turns),
            skipped=0,
            steps=len(turns),
            tokens=10,
            seconds=1.0,
            device="cpu",
            dtype="float32",
            losses=[1.0, 0.5],
        )

    def fake_export(adapter: Path, base: Path, out: Path) -> Path:
        out.write_bytes(b"lora")
        return out

    monkeypatch.setattr(step_module, "train_adapter", fake_train)
    monkeypatch.setattr("bigloop.optimize.finetune.export.to_gguf", fake_export)
    bench = TurnsBench()
    tuning = Tuning(
        base_gguf=tmp_path / "base.gguf", folder=tmp_path / "ft", rounds=2, settings=LoraSettings()
    )
    reflector = FunctionModel(lambda messages, tools: "unused")
    optimizer = Optimizer(
        bench, Evaluator(bench, tmp_path / "e.jsonl"), reflector, steps=["finetune"], tuning=tuning
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert result.adapter is not None and Path(result.adapter).read_bytes() == b"lora"
    assert result.provenance is not None
    rounds = result.provenance["finetune"]
    assert [r["round"] for r in rounds] == [1, 2] and rounds[0]["dev_right"] == 4
    assert rounds[0]["failures"] == {"value_error:others": 2}  # the probe's failures, grouped
    assert len(trained[0]) == 6  # 4 training turns, the 2 failures twice
    assert result.provenance["dev_before"] == 0.5 and result.provenance["dev_after"] == 1.0


def test_a_tuned_short_name_loads_its_checked_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bigloop.atoms.models import weights
    from bigloop.atoms.models.local import LocalModel

    (tmp_path / "t.gguf").write_bytes(b"adapter")
    digest = weights.file_sha256(tmp_path / "t.gguf")
    entry = weights.Tuned(base="embedded", adapter="t.gguf", sha256=digest, config="t.json")
    monkeypatch.setattr(weights, "ADAPTERS", tmp_path)
    monkeypatch.setattr(weights, "TUNED", {"embedded-t": entry})
    model = ModelSpec(name="embedded-t").build()
    assert isinstance(model, LocalModel) and model.name == "embedded-t"
    (tmp_path / "t.gguf").write_bytes(b"changed")
    with pytest.raises(WeightsError, match="missing or damaged"):
        ModelSpec(name="embedded-t").build()


def test_answer_turns_are_capped_to_their_share() -> None:
    from bigloop.optimize.finetune.step import _capped

    def turn(reply: str, k: int) -> Turn:
        return Turn(
            chat=[{"role": "user", "content": str(k)}], reply=reply, source=str(k), family="f"
        )

    calls = [turn('{"tool_calls": []}', k) for k in range(19)]
    answers = [turn('{"answer": "no"}', k) for k in range(10)]
    kept = _capped(calls + answers, 0.05, lambda line: None)
    assert kept[:19] == calls and len(kept) == 20  # 1 answer turn: 5% of 20
    assert _capped(calls + answers[:1], 0.05, lambda line: None) == calls + answers[:1]


def test_a_withdrawn_model_name_says_why_and_what_to_use() -> None:
    with pytest.raises(UserError, match=r"withdrawn.*0 of 48.*--model embedded"):
        ModelSpec(name="embedded-tuned").build()


def test_the_shipped_adapters_are_the_ones_their_hashes_name() -> None:
    from bigloop.atoms.models import weights

    shipped = sorted(p.name for p in weights.ADAPTERS.glob("*.gguf"))
    assert shipped == sorted(t.adapter for t in weights.TUNED.values())  # none unlisted
    for name, tuned in weights.TUNED.items():
        path = weights.tuned_adapter(name)
        assert path.name == tuned.adapter and path.stat().st_size < 32 * 1024 * 1024
        reader = gguf.GGUFReader(path)
        assert bytes(reader.fields["general.type"].parts[-1]).decode() == "adapter"
