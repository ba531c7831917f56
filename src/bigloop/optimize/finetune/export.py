"""A peft LoRA adapter as llama.cpp's GGUF LoRA, which `Llama(lora_path=...)` applies
over the quantized model it was trained for."""

from __future__ import annotations

import json
from pathlib import Path

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
