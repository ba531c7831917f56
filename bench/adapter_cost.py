"""What a LoRA adapter costs at run time (issue 24's cost table): prompt and generation
tokens per second of the embedded model with and without a GGUF LoRA adapter, on this
machine, in one process.

Both models are loaded once; then, `--repeats` times, each is timed reading 256 tokens
and writing 32 one at a time (`Rates.measure`, the probe `bigloop` uses for its latency
floor), alternating which goes first so neither gets the warmer caches. The medians and
their ratio are reported; the adapter is the suite adapter of attempt 3 unless `--adapter`
names another file.

    python bench/adapter_cost.py --repeats 7
        # writes bench/results/finetune/adapter_cost.md and .json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bigloop import LocalModel
from bigloop.atoms.models.rates import Rates

RESULTS = Path(__file__).parent / "results" / "finetune"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--adapter",
        type=Path,
        default=Path(__file__).parent / "results" / "finetune" / "suite3" / "adapter.gguf",
        help="a GGUF LoRA (default: the suite adapter of attempt 3)",
    )
    args = parser.parse_args()
    adapter = args.adapter
    models = {
        "base": LocalModel(name="embedded").llama(),
        "adapter": LocalModel(name="embedded+adapter", lora=adapter).llama(),
    }
    seen: dict[str, list[Rates]] = {name: [] for name in models}
    for k in range(args.repeats):
        order = list(models) if k % 2 == 0 else list(reversed(models))
        for name in order:
            seen[name].append(Rates.measure(models[name]))
            print(name, seen[name][-1], flush=True)
    rows = {
        name: {
            "prompt_tps": statistics.median(r.prompt_tps for r in rates),
            "generation_tps": statistics.median(r.generation_tps for r in rates),
        }
        for name, rates in seen.items()
    }
    base, tuned = rows["base"], rows["adapter"]
    cost = {
        "prompt": base["prompt_tps"] / tuned["prompt_tps"] - 1,
        "generation": base["generation_tps"] / tuned["generation_tps"] - 1,
    }
    size = adapter.stat().st_size / 1e6
    lines = [
        "# Run-time cost of a LoRA adapter (embedded 0.5B, llama.cpp, this machine)",
        "",
        f"`python bench/adapter_cost.py --repeats {args.repeats}`"
        + (f" --adapter {adapter}" if args.adapter else "")
        + f". Adapter: `{adapter.name}` ({size:.1f} MB). Medians of {args.repeats} "
        "alternating measurements (256 prompt tokens read, 32 tokens written one at a time).",
        "",
        "| model | prompt tokens/s | generation tokens/s |",
        "|---|---|---|",
        *(
            f"| {name} | {r['prompt_tps']:.0f} | {r['generation_tps']:.1f} |"
            for name, r in rows.items()
        ),
        "",
        f"Extra time per token with the adapter: prompt {cost['prompt']:+.1%}, "
        f"generation {cost['generation']:+.1%}.",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "adapter_cost.md").write_text("\n".join(lines) + "\n")
    data = {"rows": rows, "extra_time_per_token": cost, "adapter_mb": round(size, 2)}
    (RESULTS / "adapter_cost.json").write_text(json.dumps(data, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
