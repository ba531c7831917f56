"""Tool retrieval on real tool descriptions: BM25, dense and hybrid, at 1k, 10k and 100k tools.

Corpus: every distinct function doc in BFCL (all single-turn files and the multi-turn
function docs). Queries: BFCL `multiple` and `live_multiple` questions, whose gold
function is the one their ground truth calls. Hits are counted per capability (a
function's name and parameter names): vendor variants and real near-duplicates of one
function are collapsed before ranking, as the loop routes among providers of a
capability. Each index size holds the gold functions of
the evaluated queries plus distractors: real BFCL functions first, then, past the real
ones, variants of them (the same API offered by another vendor: a vendor-prefixed name,
the vendor named in the description).

Reported per size and mode: recall@1/5/10, p50/p95 query latency (query embedding
included), index build time, memory, and the time to load the saved registry. Card
embeddings are cached under ~/.cache/bigloop-bench (they take minutes at 100k).

    python bench/retrieval.py                # writes bench/results/retrieval.md and .json
    python bench/retrieval.py --sizes 1000   # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from bigloop_eval.bfcl_data import function_cards, load_cases

from bigloop.atoms.card import AtomCard
from bigloop.registry import Registry, card_text

RESULTS = Path(__file__).parent / "results"
DEPTH = 300
"""Results per query, before collapsing providers of one capability (at 100,000 tools
each real function has ~34 vendor variants)."""
EMBED_TOKENS = 64
"""Cards and queries are embedded cut at 64 tokens (name, the description's start, the
parameters): 100,000 cards take ~15 minutes on 2 cores at this length."""
CACHE = Path.home() / ".cache" / "bigloop-bench"
VENDORS = [
    "acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka", "tyrell",
    "cyberdyne", "aperture", "vandelay", "oscorp", "soylent", "gringotts", "nakatomi",
    "monarch", "dunder", "pied_piper", "massive", "nimbus", "zenith", "orbit", "quanta",
    "vertex", "helix", "lumen", "nova", "polaris", "sierra", "tango", "yotta",
]  # fmt: skip


def key(name: str, description: str) -> str:
    return f"{name}\x00{description}"


def real_cards() -> dict[str, AtomCard]:
    """Every distinct BFCL function doc, keyed by (name, description)."""
    cards = function_cards(multi_turn=True)
    return {key(c.name.split("#")[0], c.description): c for c in cards}


def queries(cards: dict[str, AtomCard]) -> list[tuple[str, str, str]]:
    """(category, question, gold card key) for multiple and live_multiple."""
    out = []
    for category in ("multiple", "live_multiple"):
        for case in load_cases(category):
            if not case.answer:
                continue
            gold_name = next(iter(case.answer[0]))
            doc = next((f for f in case.functions if f["name"] == gold_name), None)
            if doc is None:
                continue
            question = " ".join(m["content"] for m in case.messages if m["role"] == "user")
            out.append((category, question, key(doc["name"], doc.get("description", ""))))
    return out


def variant(card: AtomCard, vendor: str) -> AtomCard:
    base = card.name.split("#")[0]
    return AtomCard(
        name=f"{vendor}_{base}#{card.name.split('#')[1]}:{vendor}",
        kind="tool",
        description=f"{card.description} (provided by {vendor.replace('_', ' ').title()})",
        input_schema=card.input_schema,
    )


def embeddings(cards: list[AtomCard]) -> np.ndarray:
    texts = [card_text(c) for c in cards]
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"retrieval-{len(texts)}-{EMBED_TOKENS}-{digest}.npy"
    if path.exists():
        return np.load(path)
    from bigloop.atoms.embed import Embedder

    print(f"embedding {len(texts)} cards (cached at {path})…", flush=True)
    vectors = Embedder(batch_size=128, max_tokens=EMBED_TOKENS).encode(texts, progress=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def index_cards(
    size: int, golds: list[str], reals: dict[str, AtomCard], rng: random.Random
) -> list[AtomCard]:
    chosen = [reals[g] for g in golds]
    others = [c for k, c in reals.items() if k not in set(golds)]
    rng.shuffle(others)
    chosen += others[: max(0, size - len(chosen))]
    pool = list(reals.values())
    v = 0
    while len(chosen) < size:
        card = pool[v % len(pool)]
        chosen.append(variant(card, VENDORS[(v // len(pool)) % len(VENDORS)]))
        v += 1
    return chosen[:size]


def capability(card: AtomCard) -> str:
    """What a card does, for counting hits: its base function's name and parameter names.
    A vendor variant, and a real near-duplicate with the same name and parameters, is the
    same capability; the loop routes among providers of one capability (cost, latency,
    privacy), so retrieval is scored on finding the capability."""
    base = card.name.split("#")[0]
    if ":" in card.name:
        vendor = card.name.rsplit(":", 1)[1]
        base = base.removeprefix(vendor + "_")
    params = ",".join(sorted((card.input_schema.get("properties") or {}).keys()))
    return f"{base}({params})"


def evaluate(
    registry: Registry, qs: list[tuple[str, str, str]], gold_caps: dict[str, str], mode: str
) -> dict[str, Any]:
    ranks: list[int | None] = []
    latencies = []
    for _, question, gold in qs:
        start = time.perf_counter()
        hits = registry.search(question, k=DEPTH, mode=mode, depth=DEPTH)  # type: ignore[arg-type]
        latencies.append((time.perf_counter() - start) * 1000)
        seen: list[str] = []
        for hit in hits:
            cap = capability(hit.card)
            if cap not in seen:
                seen.append(cap)
        target = gold_caps[gold]
        ranks.append(seen.index(target) + 1 if target in seen else None)
    n = len(ranks)
    lat = sorted(latencies)
    recall = {f"recall@{k}": sum(1 for r in ranks if r and r <= k) / n for k in (1, 5, 10)}
    return {
        **recall,
        "p50_ms": statistics.median(lat),
        "p95_ms": lat[min(n - 1, int(0.95 * n))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=600, help="queries evaluated (sampled)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--embed-only", action="store_true", help="compute and cache the card embeddings, stop"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    reals = real_cards()
    all_queries = queries(reals)
    rng.shuffle(all_queries)
    qs = all_queries[: args.queries]
    golds = sorted({g for _, _, g in qs})
    gold_caps = {g: capability(reals[g]) for g in golds}
    print(f"{len(reals)} distinct BFCL functions; {len(qs)} queries, {len(golds)} gold functions")
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        cards = index_cards(size, golds, reals, random.Random(args.seed))
        start = time.perf_counter()
        vectors = embeddings(cards)
        embed_s = time.perf_counter() - start
        if args.embed_only:
            continue
        registry = Registry()
        registry.add_cards(cards)
        start = time.perf_counter()
        registry.build(vectors=vectors)
        build_s = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            registry.save(tmp)
            start = time.perf_counter()
            loaded = Registry.load(tmp)
            load_s = time.perf_counter() - start
            size_mb = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file()) / 1e6
            from bigloop.atoms.embed import Embedder

            loaded._embedder = Embedder(max_tokens=EMBED_TOKENS)
            for mode in ("bm25", "dense", "hybrid"):
                result = evaluate(loaded, qs, gold_caps, mode)
                row = {
                    "tools": size,
                    "mode": mode,
                    **result,
                    "build_s": build_s,
                    "embed_s": embed_s,
                    "load_s": load_s,
                    "disk_mb": size_mb,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    lines = [
        "# Tool retrieval over BFCL function docs",
        "",
        f"Command: `python bench/retrieval.py --sizes {args.sizes} --queries {args.queries}`. "
        f"{len(reals)} distinct real functions; {len(qs)} queries from BFCL multiple and "
        f"live_multiple ({len(golds)} gold functions). Sizes past {len(reals)} are filled "
        "with vendor variants of real functions. Latency includes embedding the query "
        f"(MiniLM, 2 CPU threads); cards and queries are cut at {EMBED_TOKENS} tokens.",
        "",
        "| tools | mode | recall@1 | recall@5 | recall@10 | p50 ms | p95 ms | index build s "
        "| card embedding s | load s | on disk MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tools']:,} | {r['mode']} | {r['recall@1']:.3f} | {r['recall@5']:.3f} "
            f"| {r['recall@10']:.3f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['build_s']:.1f} "
            f"| {r['embed_s']:.1f} | {r['load_s']:.3f} | {r['disk_mb']:.0f} |"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "retrieval.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "retrieval.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
