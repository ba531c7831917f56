"""Preference tuning (DPO) of a LoRA adapter on `Pair`s: at states of verified runs, the
verified reply over the model's own different one.

The policy starts from an adapter (the config's, so supervised tuning comes first) and
the reference is that same adapter, frozen: each pair's reference log-probabilities are
computed once, before the first step, and kept beside the checkpoints, so a resumed run
uses the same ones. The loss is DPO's, `-log σ(β · ((π_c − ref_c) − (π_r − ref_r)))`,
plus `sft_weight` times the chosen reply's mean negative log-likelihood (RPO, Pang et
al. 2024: with few pairs, DPO alone also lowers the chosen reply's likelihood). Only
the replies' tokens count; the shared prompt is context.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.optimize.finetune.train import (
    Fit,
    LoraSettings,
    Progress,
    Trained,
    encode,
    finished,
    load_model,
)
from bigloop.optimize.finetune.turns import Pair


@dataclass(frozen=True, kw_only=True)
class PreferenceSettings:
    """How a preference run trains.

    Attributes:
        lora: the optimizer's settings (rate, epochs, seed, device, checkpoints); the
            adapter's rank is the starting adapter's.
        beta: DPO's β, how far the policy may move from the reference.
        sft_weight: the weight of the chosen reply's likelihood term.
    """

    lora: LoraSettings = field(default_factory=lambda: LoraSettings(learning_rate=RATE))
    beta: float = 0.1
    sft_weight: float = 1.0

    @classmethod
    def like(cls, lora: LoraSettings) -> PreferenceSettings:
        """`lora`'s epochs, seed, device and checkpoints, at the preference rate."""
        return cls(lora=dataclasses.replace(lora, learning_rate=RATE))


RATE = 1e-4
"""The preference step's learning rate: half of supervised tuning's, since it moves an
adapter already tuned rather than a fresh one (and it has far fewer examples to move it
with: tens of pairs against hundreds of turns)."""


Encoded = tuple[list[int], list[int]]


def train_preference(
    pairs: list[Pair],
    base: Path,
    start: Path | None,
    folder: Path,
    settings: PreferenceSettings | None = None,
    progress: Progress | None = None,
) -> Trained:
    """Train on `pairs` from the peft adapter in folder `start` (None: a fresh LoRA on
    `base`, the reference then being the base model); the adapter is saved in
    `folder/adapter`.

    Raises:
        UserError: the training extra is missing, or no pair fits `max_tokens`.
    """
    settings = settings or PreferenceSettings()
    key = _key(pairs, base, start, settings)
    if (done := finished(folder, key)) is not None:
        return done
    with warnings.catch_warnings():  # the libraries' deprecation and GGUF notes
        warnings.simplefilter("ignore")
        return _prefer(pairs, base, start, folder, settings, key, progress)


def _prefer(
    pairs: list[Pair],
    base: Path,
    start: Path | None,
    folder: Path,
    settings: PreferenceSettings,
    key: str,
    progress: Progress | None,
) -> Trained:
    torch, model, tokenizer, device, dtype = load_model(base, settings.lora, start)
    examples: list[tuple[Encoded, Encoded]] = []
    for pair in pairs:
        chosen, rejected = (encode(tokenizer, t) for t in pair.turns())
        if (
            chosen
            and rejected
            and max(len(chosen[0]), len(rejected[0])) <= settings.lora.max_tokens
        ):
            examples.append((chosen, rejected))
    if not examples:
        raise UserError(f"No preference pair fits in {settings.lora.max_tokens} tokens.")
    reference = _reference(torch, model, examples, folder, key, device)

    def step(i: int) -> tuple[Any, int]:
        (chosen, rejected), (ref_chosen, ref_rejected) = examples[i], reference[i]
        logp_chosen, n_chosen = _logp(torch, model, chosen, device)
        logp_rejected, _ = _logp(torch, model, rejected, device)
        margin = settings.beta * ((logp_chosen - ref_chosen) - (logp_rejected - ref_rejected))
        loss = -torch.nn.functional.logsigmoid(margin)
        loss = loss + settings.sft_weight * (-logp_chosen / n_chosen)
        return loss, len(chosen[0]) + len(rejected[0])

    fit = Fit(torch=torch, model=model, device=device, dtype=dtype, folder=folder, key=key)
    return fit.run(
        list(range(len(examples))),
        step,
        settings.lora,
        skipped=len(pairs) - len(examples),
        progress=progress,
    )


def _logp(torch: Any, model: Any, example: Encoded, device: str) -> tuple[Any, int]:
    """The summed log-probability of the example's reply tokens (labels not -100) and
    their count; logits are computed for the reply's positions only."""
    ids, labels = example
    n = sum(1 for label in labels if label != -100)
    out = model(input_ids=torch.tensor([ids], device=device), logits_to_keep=n + 1)
    logits = out.logits[0, :-1].float()
    targets = torch.tensor(labels[-n:], device=device)
    logp = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None]).sum()
    return logp, n


def _reference(
    torch: Any,
    model: Any,
    examples: list[tuple[Encoded, Encoded]],
    folder: Path,
    key: str,
    device: str,
) -> list[tuple[float, float]]:
    """Each pair's reference log-probabilities (chosen, rejected) under the model as it
    starts; kept in `folder` for the same key, so a resumed run reads them rather than
    recomputing them with a partly trained adapter."""
    saved = folder / "reference.json"
    try:
        data = json.loads(saved.read_text())
        if data["key"] == key:
            return [(float(c), float(r)) for c, r in data["logp"]]
    except (OSError, ValueError, KeyError):
        pass
    model.eval()
    with torch.no_grad():
        logp = [
            (_logp(torch, model, c, device)[0].item(), _logp(torch, model, r, device)[0].item())
            for c, r in examples
        ]
    folder.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps({"key": key, "logp": logp}))
    return logp


def _key(pairs: list[Pair], base: Path, start: Path | None, settings: PreferenceSettings) -> str:
    """What a checkpoint must match: the pairs, the base, the starting adapter, the settings."""
    data = json.dumps([asdict(p) for p in pairs], sort_keys=True)
    weights = start / "adapter_model.safetensors" if start is not None else None
    started = hashlib.sha256(weights.read_bytes()).hexdigest() if weights else ""
    stat = base.stat()
    parts = [
        data,
        base.name,
        str(stat.st_size),
        started,
        json.dumps(asdict(settings), sort_keys=True),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
