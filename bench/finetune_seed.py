"""Retrain a committed fine-tuning run's turns with another seed: how far apart two
training runs of the same data land (the spread a dev or test gain must clear).

Same turns, base model (the config's local model) and LoRA settings as `bigloop optimize
--step finetune` (rank 16, one epoch, bf16 on CPU); only the seed changes (the examples'
order and the adapter's initial values). Writes FOLDER/adapter.gguf and
FOLDER/suite-tuned.json (CONFIG with the new adapter, its sha256 and the run's cost in
the provenance); resumable: a killed run goes on from its last checkpoint. Score it
with bench/suite.py --config.

    python bench/finetune_seed.py bench/results/finetune/suite3/turns.jsonl \
        --config bench/results/finetune/suite3/suite-tuned.json --seed 1 \
        --folder /tmp/sft/suite3-seed1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop.atoms.models.weights import file_sha256, local_gguf
from bigloop.config import LoopConfig
from bigloop.optimize.finetune.export import to_gguf
from bigloop.optimize.finetune.step import progress_lines
from bigloop.optimize.finetune.train import LoraSettings, train_adapter
from bigloop.optimize.finetune.turns import load_turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("turns", type=Path, help="A run's turns.jsonl.")
    parser.add_argument("--config", type=Path, required=True, help="That run's tuned config.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--folder", type=Path, required=True, help="Checkpoints and outputs.")
    args = parser.parse_args()
    turns = load_turns(args.turns)
    config = LoopConfig.model_validate_json(args.config.read_text())
    base = local_gguf(config.model)
    settings = LoraSettings(seed=args.seed)  # the optimizer's defaults: rank 16, one epoch
    started = time.monotonic()
    progress = progress_lines(lambda line: print(line, flush=True))
    trained = train_adapter(turns, base, args.folder, settings, progress)
    adapter = to_gguf(trained.adapter, base, args.folder / "adapter.gguf")
    provenance = dict(config.provenance or {})
    provenance["reseeded"] = {
        "turns": str(args.turns),
        "turns_n": len(turns),
        "seed": args.seed,
        "trained": trained.summary(),
        "wall_s": round(time.monotonic() - started, 1),
    }
    tuned = config.model_copy(
        update={
            "adapter": str(adapter.resolve()),
            "adapter_sha256": file_sha256(adapter),
            "provenance": provenance,
        }
    )
    out = args.folder / "suite-tuned.json"
    out.write_text(tuned.model_dump_json(indent=1))
    print(json.dumps(provenance["reseeded"], indent=1))
    print(f"Wrote {out}.")


if __name__ == "__main__":
    main()
