"""A peft LoRA adapter as llama.cpp's GGUF LoRA, which `Llama(lora_path=...)` applies
over the quantized model it was trained for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bigloop._errors import UserError


def to_gguf(adapter: Path, base: Path, out: Path) -> Path:
    """Write the peft adapter in folder `adapter` as a GGUF LoRA for the GGUF `base`
    (tensor names mapped by the `gguf` package for `base`'s architecture; f16).

    Raises:
        UserError: the adapter or its config is unreadable, or a tensor has no GGUF name.
    """
    try:
        import gguf
        import numpy as np
        from safetensors.numpy import load_file
    except ImportError as e:
        raise UserError(
            f"Exporting an adapter needs {e.name}: pip install 'bigloop[train]'."
        ) from None
    try:
        config = json.loads((adapter / "adapter_config.json").read_text())
        tensors = load_file(str(adapter / "adapter_model.safetensors"))
    except (OSError, ValueError) as e:
        raise UserError(f"Cannot read the adapter in {adapter}: {e}") from None
    reader = gguf.GGUFReader(base)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    blocks = int(reader.fields[f"{arch}.block_count"].parts[-1][0])
    names = gguf.get_tensor_name_map({v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch], blocks)
    writer = gguf.GGUFWriter(str(out), arch)
    writer.add_string(gguf.Keys.General.TYPE, gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))
    for key in sorted(tensors):
        # base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight
        module, _, part = key.removeprefix("base_model.model.").rpartition(".lora_")
        name = names.get_name(module + ".weight", try_suffixes=(".weight",))
        if name is None:
            raise UserError(f"Adapter tensor {key} has no GGUF name for {arch}.")
        suffix = ".lora_a" if part.startswith("A") else ".lora_b"
        writer.add_tensor(name + suffix, tensors[key].astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def from_gguf(lora: Path, base: Path, folder: Path) -> Path:
    """The GGUF LoRA `lora` (as `to_gguf` writes it, for the GGUF `base`) as a peft
    adapter folder again, so training can go on from it (the preference step starts from
    the config's adapter). Module names are those of the Llama-family layout the embedded
    models use (`model.layers.N.self_attn.*` and `model.layers.N.mlp.*`).

    Raises:
        UserError: a file is unreadable, or a tensor is not a LoRA of a known projection.
    """
    try:
        import gguf
        import numpy as np
        from safetensors.numpy import save_file
    except ImportError as e:
        raise UserError(
            f"Reading an adapter needs {e.name}: pip install 'bigloop[train]'."
        ) from None
    try:
        reader = gguf.GGUFReader(lora)
        alpha = float(reader.fields[gguf.Keys.Adapter.LORA_ALPHA].parts[-1][0])
        base_reader = gguf.GGUFReader(base)
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"Cannot read the GGUF LoRA {lora} for {base}: {e}") from None
    modules = _projections(gguf, base_reader)
    tensors: dict[str, Any] = {}
    rank = 0
    for tensor in reader.tensors:
        name, _, part = tensor.name.rpartition(".lora_")
        if name not in modules or part not in ("a", "b"):
            raise UserError(f"{lora}: tensor {tensor.name} is not a LoRA of a known projection.")
        key = f"base_model.model.{modules[name]}.lora_{part.upper()}.weight"
        tensors[key] = np.array(tensor.data, dtype=np.float32)
        if part == "a":
            rank = tensors[key].shape[0]
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    targets = sorted({k.rsplit(".", 2)[0].rsplit(".", 1)[1] for k in tensors})
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": rank,
        "lora_alpha": alpha,
        "lora_dropout": 0.0,
        "target_modules": targets,
        "bias": "none",
    }
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2))
    return folder


def _projections(gguf: Any, reader: Any) -> dict[str, str]:
    """GGUF tensor name -> peft module name, for every projection an adapter trains, in
    the base (read by `reader`) of the Llama-family layout."""
    from bigloop.optimize.finetune.train import PROJECTIONS

    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    blocks = int(reader.fields[f"{arch}.block_count"].parts[-1][0])
    names = gguf.get_tensor_name_map({v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch], blocks)
    modules: dict[str, str] = {}
    for i in range(blocks):
        for part in ("self_attn", "mlp"):
            for leaf in PROJECTIONS:
                module = f"model.layers.{i}.{part}.{leaf}"
                name = names.get_name(module + ".weight", try_suffixes=(".weight",))
                if name is not None:
                    modules[name] = module
    return modules
