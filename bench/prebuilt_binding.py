"""A prebuilt llama.cpp binding from the registry against today's compiled one.

`llama-cpp-py-sync` (a CFFI build of upstream llama.cpp, a wheel with its own libraries:
no compile) against the `llama-cpp-python` setup.sh compiles for this CPU's tier: the
same GGUF (the embedded model), the same chat, greedy, one process each, run in turn.
Reported: prompt and generation speed (median of --repeat runs) and each feature bigloop's
`LocalModel` uses, looked up in the binding's API.

    .venv/bin/pip download --no-deps -d /tmp/wheels llama-cpp-py-sync
    .venv/bin/pip install --no-deps --target /tmp/py-sync /tmp/wheels/llama_cpp_py_sync-*.whl
    .venv/bin/python bench/prebuilt_binding.py --target /tmp/py-sync

Writes bench/results/prebuilt_binding/README.md. The rule (issue 46): adopt the prebuilt
path only at >= 0.9x the speed with every feature bigloop uses; otherwise keep compiling.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "prebuilt_binding" / "README.md"
CHAT = [
    {"role": "system", "content": "You are a precise, concise assistant."},
    {
        "role": "user",
        "content": "List the planets of the solar system, one per line, "
        "each with one fact about it.",
    },
]

COMPILED = """
import json, sys, time
import llama_cpp
path, chat, tokens = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
llm = llama_cpp.Llama(path, n_ctx=2048, n_threads=2, verbose=False)
start = time.perf_counter()
out = llm.create_chat_completion(messages=chat, max_tokens=tokens, temperature=0.0)
took = time.perf_counter() - start
u = out["usage"]
print(json.dumps({"prompt": u["prompt_tokens"], "completion": u["completion_tokens"],
                  "seconds": took, "text": out["choices"][0]["message"]["content"][:80]}))
"""

PREBUILT = """
import json, sys, time
sys.path.insert(0, sys.argv[4])
import llama_cpp_py_sync as lps
path, chat, tokens = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
llm = lps.Llama(path, n_ctx=2048, n_threads=2, verbose=False)
start = time.perf_counter()
out = llm.create_chat_completion(chat, max_tokens=tokens, temperature=0.0, top_k=1,
                                 repeat_penalty=1.0)
took = time.perf_counter() - start
u = out.get("usage", {})
text = out["choices"][0]["message"]["content"]
print(json.dumps({"prompt": u.get("prompt_tokens"), "completion": u.get("completion_tokens"),
                  "seconds": took, "text": text[:80]}))
"""

FEATURES = """
import json, sys
sys.path.insert(0, sys.argv[1])
import llama_cpp_py_sync as lps
from llama_cpp_py_sync import constraints, llama
L = llama.Llama
lib = set(dir(getattr(lps, "_cffi_bindings", None) or object()))
src = open(llama.__file__).read() + open(lps._cffi_bindings.__file__).read()
print(json.dumps({
    "chat completion with a chat template": hasattr(L, "create_chat_completion"),
    "grammar from a JSON schema": hasattr(constraints, "response_format_to_grammar"),
    "logits processors (bigloop's fast grammar, P(yes) reads)": "logits_processor" in src,
    "prompt state save / restore in the Python API": hasattr(L, "save_state"),
    "prompt state save / restore in the C bindings": "llama_state_seq_get_data" in src,
    "LoRA adapter in the Python API": "lora" in open(llama.__file__).read().lower(),
    "LoRA adapter in the C bindings": "llama_adapter_lora_init" in src,
}))
"""


def _run(code: str, *args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="where llama-cpp-py-sync is installed")
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from bigloop.atoms.models.weights import default_model_path

    model = str(default_model_path())
    chat = json.dumps(CHAT)
    runs: dict[str, list[dict[str, object]]] = {"compiled": [], "prebuilt": []}
    for _ in range(args.repeat):  # alternated, so drift hits both alike
        runs["compiled"].append(_run(COMPILED, model, chat, str(args.tokens)))
        runs["prebuilt"].append(_run(PREBUILT, model, chat, str(args.tokens), args.target))
    features = _run(FEATURES, args.target)
    rates = {}
    for name, done in runs.items():
        ok = [r for r in done if "error" not in r and r.get("completion")]
        rates[name] = (
            statistics.median(float(str(r["completion"])) / float(str(r["seconds"])) for r in ok)
            if ok
            else None
        )
    print(json.dumps({"runs": runs, "features": features, "rates": rates}, indent=1))
    _write(args, runs, features, rates)
    return 0


def _write(
    args: argparse.Namespace,
    runs: dict[str, list[dict[str, object]]],
    features: dict[str, object],
    rates: dict[str, float | None],
) -> None:
    base, other = rates["compiled"], rates["prebuilt"]
    ratio = f"{other / base:.2f}x" if base and other else "n/a"
    lines = [
        "# A prebuilt llama.cpp binding (llama-cpp-py-sync) against the compiled one",
        "",
        f"`.venv/bin/python bench/prebuilt_binding.py --target {args.target} --tokens "
        f"{args.tokens} --repeat {args.repeat}`: the embedded Qwen2.5-Coder-0.5B Q4_K_M, one "
        "chat, greedy, one process per run, 2 threads, this 2-core machine.",
        "",
        "| binding | tokens/s over the whole completion (median) | ratio | sample |",
        "|---|---|---|---|",
        f"| llama-cpp-python, compiled by setup.sh for this tier | {base or 'failed'} | 1.00x | "
        f"{runs['compiled'][0].get('text', runs['compiled'][0])!r} |",
        f"| llama-cpp-py-sync, prebuilt wheel | {other or 'failed'} | {ratio} | "
        f"{runs['prebuilt'][0].get('text', runs['prebuilt'][0])!r} |",
        "",
        "| feature bigloop's LocalModel uses | in llama-cpp-py-sync |",
        "|---|---|",
        *[f"| {k} | {'yes' if v else 'no'} |" for k, v in features.items()],
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
