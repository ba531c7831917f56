"""A LoRA adapter trained on `Turn`s, on the weights of the model's own GGUF.

transformers reads the GGUF (dequantizing it with the `gguf` package), peft adds LoRA
matrices to every attention and MLP projection, and only the reply's tokens are learnt
(the prompt is context). One example per step, a fixed seed, bf16 where the CPU (or GPU)
has it. A checkpoint is written every `save_every` examples: a killed run started again
with the same turns and settings resumes after the last one; one started again after
training ended returns the finished run's record (`trained.json` beside the adapter).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.optimize.finetune.turns import Turn

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_HINT = "Install the training extra: pip install 'bigloop[train]' (make setup does it)."


@dataclass(frozen=True, kw_only=True)
class LoraSettings:
    """How an adapter is trained.

    Attributes:
        rank: the LoRA rank r; alpha: its scale numerator (the update is alpha/r x BA).
        learning_rate: AdamW's, with a linear decay to 0 over the run.
        epochs: passes over the turns.
        accumulate: examples per optimizer step.
        max_tokens: turns longer than this (prompt + reply) are skipped, and counted.
        seed: the shuffle's and the adapter's initial values.
        device: "cpu", "cuda" or "auto" (a GPU when torch sees one).
        save_every: examples between checkpoints.
    """

    rank: int = 16
    alpha: int = 32
    learning_rate: float = 2e-4
    epochs: int = 1
    accumulate: int = 2
    max_tokens: int = 2048
    seed: int = 0
    device: str = "auto"
    save_every: int = 16


@dataclass(kw_only=True)
class Trained:
    """What a training run did: the adapter folder and its cost."""

    adapter: Path
    examples: int
    skipped: int
    steps: int
    tokens: int
    seconds: float
    device: str
    dtype: str
    losses: list[float] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        data["adapter"] = str(self.adapter)
        n = max(len(self.losses) // 10, 1)
        data["loss_first"] = round(sum(self.losses[:n]) / n, 4) if self.losses else None
        data["loss_last"] = round(sum(self.losses[-n:]) / n, 4) if self.losses else None
        data["tokens_per_s"] = round(self.tokens_per_s, 1)
        del data["losses"]
        return data


Progress = Callable[[int, int, int, float, float], None]
"""`progress(done, total, tokens, loss, seconds)` after each example (tokens and seconds
of this session's training, a resumed run's earlier part not counted)."""


def train_adapter(
    turns: list[Turn],
    base: Path,
    folder: Path,
    settings: LoraSettings | None = None,
    progress: Progress | None = None,
) -> Trained:
    """Train a LoRA adapter for the GGUF `base` on `turns`; it is saved in
    `folder/adapter` (peft's format; `export.to_gguf` makes llama.cpp's).

    Raises:
        UserError: the training extra is missing, or no turn fits `max_tokens`.
    """
    settings = settings or LoraSettings()
    key = _key(turns, base, settings)
    if (done := finished(folder, key)) is not None:
        return done
    with warnings.catch_warnings():  # the libraries' deprecation and GGUF notes
        warnings.simplefilter("ignore")
        return _train(turns, base, folder, settings, key, progress)


_RECORD = "trained.json"
"""In the adapter's folder: the key it was trained for and its `Trained` record."""


def finished(folder: Path, key: str) -> Trained | None:
    """The record of a finished run in `folder` for the same `key` (the same turns, base
    and settings): a rerun after training ended (the optimizer killed while scoring the
    adapter) does not train again. None: no such run."""
    record = folder / "adapter" / _RECORD
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if data.pop("key", None) != key:
        return None
    return Trained(**{**data, "adapter": folder / "adapter"})


def _train(
    turns: list[Turn],
    base: Path,
    folder: Path,
    settings: LoraSettings,
    key: str,
    progress: Progress | None,
) -> Trained:
    torch, model, tokenizer, device, dtype = load_model(base, settings)
    encoded = [e for t in turns if (e := encode(tokenizer, t)) is not None]
    fits = [e for e in encoded if len(e[0]) <= settings.max_tokens]
    if not fits:
        raise UserError(f"No training turn fits in {settings.max_tokens} tokens.")

    def step(example: tuple[list[int], list[int]]) -> tuple[Any, int]:
        ids, labels = example
        batch = torch.tensor([ids], device=device)
        out = model(input_ids=batch, labels=torch.tensor([labels], device=device))
        return out.loss, len(ids)

    fit = Fit(torch=torch, model=model, device=device, dtype=dtype, folder=folder, key=key)
    return fit.run(fits, step, settings, skipped=len(turns) - len(fits), progress=progress)


Step = Callable[[Any], tuple[Any, int]]
"""One example's loss (a scalar tensor to minimize) and its token count."""


@dataclass(kw_only=True)
class Fit:
    """A training run over examples with a loss of its own (supervised or preference):
    a seeded order over the epochs, accumulated AdamW steps at a linearly decaying rate,
    checkpoints to resume from, and the saved adapter with its record."""

    torch: Any
    model: Any
    device: str
    dtype: Any
    folder: Path
    key: str

    def run(
        self,
        examples: list[Any],
        step: Step,
        settings: LoraSettings,
        *,
        skipped: int,
        progress: Progress | None,
    ) -> Trained:
        torch, model, folder, key = self.torch, self.model, self.folder, self.key
        order = _order(len(examples), settings)
        done, optimizer, losses = _resume(torch, model, folder, key, settings, len(order))
        tokens, start = 0, time.perf_counter()
        model.train()
        for i in range(done, len(order)):
            loss, n = step(examples[order[i]])
            (loss / settings.accumulate).backward()
            losses.append(loss.item())
            tokens += n
            if (i + 1) % settings.accumulate == 0 or i + 1 == len(order):
                _update(optimizer, i, len(order), settings)
            if (i + 1) % settings.save_every == 0 and i + 1 < len(order):
                _checkpoint(torch, model, optimizer, folder, key, i + 1, losses)
            if progress is not None:
                progress(i + 1, len(order), tokens, losses[-1], time.perf_counter() - start)
        adapter = folder / "adapter"
        model.save_pretrained(adapter)
        trained = Trained(
            adapter=adapter,
            examples=len(examples),
            skipped=skipped,
            steps=len(order),
            tokens=tokens,
            seconds=round(time.perf_counter() - start, 1),
            device=self.device,
            dtype=str(self.dtype).removeprefix("torch."),
            losses=losses,
        )
        record = {**asdict(trained), "adapter": str(adapter), "key": key}
        (adapter / _RECORD).write_text(json.dumps(record))
        shutil.rmtree(folder / "checkpoint", ignore_errors=True)
        return trained


def load_model(
    base: Path, settings: LoraSettings, start: Path | None = None
) -> tuple[Any, Any, Any, str, Any]:
    """torch, the peft-wrapped model (a fresh LoRA, or the adapter in folder `start` to
    train on), its tokenizer, the device and the dtype."""
    try:
        import torch
        from peft import LoraConfig, PeftModel, get_peft_model
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise UserError(f"Training needs {e.name}. {_HINT}") from None
    device = settings.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    bf16 = torch.cuda.is_available() if device == "cuda" else _cpu_bf16(torch)
    dtype = torch.bfloat16 if bf16 else torch.float32
    torch.manual_seed(settings.seed)
    tokenizer = AutoTokenizer.from_pretrained(base.parent, gguf_file=base.name)
    model = AutoModelForCausalLM.from_pretrained(base.parent, gguf_file=base.name, dtype=dtype)
    if start is not None:
        tuned = PeftModel.from_pretrained(model, str(start), is_trainable=True)
        return torch, tuned.to(device), tokenizer, device, dtype
    lora = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        target_modules=list(PROJECTIONS),
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
    )
    return torch, get_peft_model(model, lora).to(device), tokenizer, device, dtype


def _cpu_bf16(torch: Any) -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX)."""
    cpu = torch.cpu
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(cpu, name, lambda: False)() for name in checks)


def encode(tokenizer: Any, turn: Turn) -> tuple[list[int], list[int]] | None:
    """Token ids of the turn as the chat template renders it, and its labels (-100 on
    the prompt: only the reply and its end-of-turn are learnt); None when the template
    does not render the reply after the prompt."""
    prompt = tokenizer.apply_chat_template(turn.chat, tokenize=False, add_generation_prompt=True)
    whole = tokenizer.apply_chat_template(
        [*turn.chat, {"role": "assistant", "content": turn.reply}], tokenize=False
    )
    if not whole.startswith(prompt):
        return None
    head = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    tail = tokenizer(whole[len(prompt) :].rstrip("\n"), add_special_tokens=False)["input_ids"]
    return head + tail, [-100] * len(head) + tail


def _order(n: int, settings: LoraSettings) -> list[int]:
    """The examples' order over every epoch: a fresh shuffle per epoch, fixed by the seed."""
    rng = random.Random(settings.seed)
    order: list[int] = []
    for _ in range(settings.epochs):
        epoch = list(range(n))
        rng.shuffle(epoch)
        order += epoch
    return order


def _key(turns: list[Turn], base: Path, settings: LoraSettings) -> str:
    """What a checkpoint must match to be resumed: the turns, the base and the settings."""
    data = json.dumps([[t.chat, t.reply] for t in turns], sort_keys=True)
    stat = base.stat()
    parts = [data, base.name, str(stat.st_size), json.dumps(asdict(settings), sort_keys=True)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _optimizer(torch: Any, model: Any, settings: LoraSettings) -> Any:
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)


def _update(optimizer: Any, i: int, total: int, settings: LoraSettings) -> None:
    """One optimizer step at the linearly decayed learning rate."""
    for group in optimizer.param_groups:
        group["lr"] = settings.learning_rate * (1 - i / total)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def _checkpoint(
    torch: Any, model: Any, optimizer: Any, folder: Path, key: str, done: int, losses: list[float]
) -> None:
    """The adapter, the optimizer and the position so far, replaced as a whole."""
    fresh = folder / "checkpoint.new"
    shutil.rmtree(fresh, ignore_errors=True)
    model.save_pretrained(fresh)
    torch.save(
        {"optimizer": optimizer.state_dict(), "done": done, "losses": losses}, fresh / "state.pt"
    )
    (fresh / "key").write_text(key)
    old = folder / "checkpoint"
    shutil.rmtree(old, ignore_errors=True)
    fresh.rename(old)


def _resume(
    torch: Any, model: Any, folder: Path, key: str, settings: LoraSettings, total: int
) -> tuple[int, Any, list[float]]:
    """Examples done, the optimizer and the losses so far: from the checkpoint in
    `folder` when it was made for the same key, else a fresh start."""
    optimizer = _optimizer(torch, model, settings)
    saved = folder / "checkpoint"
    if not (saved / "key").is_file() or (saved / "key").read_text() != key:
        folder.mkdir(parents=True, exist_ok=True)
        return 0, optimizer, []
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(saved / "adapter_model.safetensors")))
    state = torch.load(saved / "state.pt", weights_only=True)
    optimizer.load_state_dict(state["optimizer"])
    return min(int(state["done"]), total), optimizer, list(state["losses"])
