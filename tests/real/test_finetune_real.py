"""A tiny real fine-tune (the CI smoke run): two verified BFCL turns, trained for real on
the embedded model's GGUF weights, checkpointed, resumed, exported as a GGUF LoRA and run
by llama.cpp through `LocalModel(lora=...)`. It checks the machinery, not that tuning
pays (that is `bench/results/finetune/`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_teach import teach

from bigloop import LocalModel, Message
from bigloop.atoms.models.weights import default_model_path
from bigloop.config import LoopConfig
from bigloop.optimize.finetune.export import from_gguf, to_gguf
from bigloop.optimize.finetune.prefer import PreferenceSettings, train_preference
from bigloop.optimize.finetune.train import LoraSettings, train_adapter
from bigloop.optimize.finetune.turns import Pair

pytestmark = pytest.mark.real
pytest.importorskip("peft")


def test_train_resume_export_and_serve_an_adapter(tmp_path: Path) -> None:
    cases = load_cases("simple_python")[100:102]
    turns = [t for c in cases for t in asyncio.run(teach(c, LoopConfig()))]
    assert len(turns) == 2
    settings = LoraSettings(rank=2, alpha=4, epochs=2, accumulate=1, save_every=1, device="cpu")
    seen: list[int] = []

    def stop_after_two(done: int, total: int, tokens: int, loss: float, seconds: float) -> None:
        seen.append(done)
        if done == 2:
            raise KeyboardInterrupt  # a killed run: the checkpoint after example 2 is kept

    with pytest.raises(KeyboardInterrupt):
        train_adapter(turns, default_model_path(), tmp_path, settings, stop_after_two)
    assert (tmp_path / "checkpoint" / "state.pt").is_file()
    trained = train_adapter(
        turns, default_model_path(), tmp_path, settings, lambda *a: seen.append(a[0])
    )
    assert seen == [1, 2, 3, 4]  # resumed after example 2 of 4 (2 turns x 2 epochs)
    assert trained.steps == 4 and trained.tokens > 0 and len(trained.losses) == 4
    assert not (tmp_path / "checkpoint").exists()
    again = train_adapter(  # finished: a rerun (the optimizer killed after training) is done
        turns, default_model_path(), tmp_path, settings, lambda *a: seen.append(a[0])
    )
    assert seen == [1, 2, 3, 4] and again.losses == trained.losses
    assert again.adapter == trained.adapter and again.tokens == trained.tokens
    lora = to_gguf(trained.adapter, default_model_path(), tmp_path / "adapter.gguf")
    model = LocalModel(lora=lora, prefix_cache=False)
    assert model.name.endswith("+ adapter.gguf")
    chat = json.loads(turns[0].reply)
    reply = asyncio.run(
        model.chat([Message(role="user", content=cases[0].messages[-1]["content"])], cases[0].tools)
    )
    assert reply.tool_calls or reply.text  # llama.cpp ran the model with the adapter
    assert chat["tool_calls"]

    # preference tuning goes on from the exported adapter, read back as a peft folder
    start = from_gguf(lora, default_model_path(), tmp_path / "start")
    pairs = [
        Pair(
            chat=t.chat, chosen=t.reply, rejected='{"answer": "I cannot."}', source="s", family="f"
        )
        for t in turns
    ]
    prefer = PreferenceSettings(lora=settings, sft_weight=0.0)
    done = train_preference(pairs, default_model_path(), start, tmp_path / "prefer", prefer)
    assert done.steps == 4 and (tmp_path / "prefer" / "reference.json").is_file()
    # the first step's policy is the reference: DPO's loss there is -log σ(0) = log 2
    assert abs(done.losses[0] - 0.6931) < 0.01
    assert done.losses[-1] < done.losses[0]  # the chosen replies gained on the rejected
