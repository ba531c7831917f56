"""The atom registry: every atom's card, searchable, persisted.

Cards are indexed twice: BM25 (`bm25s`) over their words and dense vectors (the embedded
MiniLM) in an HNSW index (`usearch`). `search` fuses both rankings by reciprocal rank
(hybrid), or uses one. A registry is saved as a folder — the cards as JSON Lines, the
BM25 matrices, the vectors and the HNSW graph — and loaded with the indexes memory-mapped,
so a registry of 100,000 tools opens in well under a second.

    registry = Registry()
    registry.add_tools([get_weather, convert_units, ...])
    registry.build()                     # embeds the cards (once), builds both indexes
    registry.save("tools.registry")
    hits = Registry.load("tools.registry").search("how warm is it in Oslo", k=5)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from bigloop._errors import UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import ToolSpec
from bigloop.atoms.tool import Tool
from bigloop.policies.select import terms
from bigloop.runtime.call import CallResult
from bigloop.runtime.runner import CallRunner

SearchMode = Literal["hybrid", "bm25", "dense"]
RRF_K = 60
"""Reciprocal rank fusion constant: a result's fused score is Σ 1 / (RRF_K + rank)."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(kw_only=True)
class Hit:
    card: AtomCard
    score: float
    rank: int


def card_text(card: AtomCard) -> str:
    """What a card is searched by: its name in words, description, parameter names and
    descriptions."""
    name = _CAMEL.sub(" ", card.name).replace("_", " ").replace(".", " ")
    params = []
    for pname, schema in (card.input_schema.get("properties") or {}).items():
        desc = schema.get("description", "") if isinstance(schema, dict) else ""
        params.append(f"{pname.replace('_', ' ')} {desc}".strip())
    return f"{name}. {card.description} {'; '.join(params)}".strip()


class Registry:
    """A catalogue of atom cards with hybrid search.

    Tools added from code keep their callable (`tools_for`); cards loaded from disk or
    other sources are metadata until a tool with the same name is attached.
    """

    def __init__(self) -> None:
        self.cards: list[AtomCard] = []
        self._index: dict[str, int] = {}
        self._tools: dict[str, Tool] = {}
        self._bm25: Any = None
        self._vectors: Any = None
        self._ann: Any = None
        self._embedder: Any = None
        self._built = 0

    def __len__(self) -> int:
        return len(self.cards)

    def add(self, card: AtomCard) -> None:
        """Add or replace a card (by name)."""
        if card.name in self._index:
            self.cards[self._index[card.name]] = card
        else:
            self._index[card.name] = len(self.cards)
            self.cards.append(card)

    def add_cards(self, cards: Iterable[AtomCard]) -> None:
        for card in cards:
            self.add(card)

    def add_tools(self, tools: Iterable[Tool]) -> None:
        for t in tools:
            self.add(t.card)
            self._tools[t.name] = t

    def card(self, name: str) -> AtomCard:
        if name not in self._index:
            raise UserError(f"No atom named {name!r} in the registry ({len(self)} atoms).")
        return self.cards[self._index[name]]

    def tools_for(self, names: Sequence[str]) -> list[Tool]:
        """The callable tools behind `names` (names without one are skipped)."""
        return [self._tools[n] for n in names if n in self._tools]

    def build(self, *, dense: bool = True, progress: bool = False, vectors: Any = None) -> None:
        """(Re)build the BM25 index and, with `dense`, embed every card into the ANN index.

        Args:
            vectors: the cards' embeddings if already computed (one row per card, in order).
        """
        import bm25s

        texts = [card_text(c) for c in self.cards]
        bm25 = bm25s.BM25()
        bm25.index([terms(t) or ["_"] for t in texts], show_progress=False)
        self._bm25 = bm25
        if dense:
            if vectors is None:
                vectors = self.embedder.encode(texts, progress=progress)
            self._vectors = vectors
            self._ann = _hnsw(vectors)
        self._built = len(self.cards)

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from bigloop.atoms.embed import Embedder

            self._embedder = Embedder()
        return self._embedder

    def search(
        self, query: str, k: int = 10, *, mode: SearchMode = "hybrid", depth: int = 50
    ) -> list[Hit]:
        """The `k` cards most relevant to `query`.

        Args:
            mode: "bm25", "dense", or "hybrid" (both, fused by reciprocal rank; BM25 alone
                when the registry was built without its dense index).
            depth: how many of each ranking the fusion considers.
        """
        if not self.cards:
            return []
        if self._built != len(self.cards):
            self.build(dense=mode != "bm25" or self._ann is not None)
        if mode == "bm25" or (mode == "hybrid" and self._ann is None):
            ranked = self._bm25_ranking(query, max(k, depth))
        elif mode == "dense":
            ranked = self._dense_ranking(query, max(k, depth))
        else:
            ranked = _fuse(self._bm25_ranking(query, depth), self._dense_ranking(query, depth))
        return [
            Hit(card=self.cards[i], score=score, rank=r)
            for r, (i, score) in enumerate(ranked[:k], start=1)
        ]

    def _bm25_ranking(self, query: str, depth: int) -> list[tuple[int, float]]:
        tokens = terms(query)
        if not tokens or self._bm25 is None:
            return []
        n = min(depth, len(self.cards))
        docs, scores = self._bm25.retrieve([tokens], k=n, show_progress=False, n_threads=1)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def _dense_ranking(self, query: str, depth: int) -> list[tuple[int, float]]:
        if self._ann is None:
            raise UserError(
                "This registry has no dense index: build it with dense=True "
                "(or search with mode='bm25')."
            )
        vector = self.embedder.encode([query])[0]
        matches = self._ann.search(vector, min(depth, len(self.cards)))
        n = len(self.cards)  # usearch pads a short result with sentinel keys
        pairs = zip(matches.keys, matches.distances, strict=True)
        return [(int(key), 1.0 - float(dist)) for key, dist in pairs if 0 <= key < n]

    def save(self, path: str | Path) -> Path:
        """Write the registry to the folder `path` (created if needed)."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        if self._built != len(self.cards):
            self.build(dense=self._ann is not None)
        with (folder / "cards.jsonl").open("w") as f:
            for card in self.cards:
                f.write(json.dumps(asdict(card), ensure_ascii=False) + "\n")
        if self._bm25 is not None:
            self._bm25.save(folder / "bm25", show_progress=False)
        if self._ann is not None:
            import numpy as np

            np.save(folder / "vectors.npy", self._vectors)
            self._ann.save(str(folder / "hnsw.usearch"))
        return folder

    @classmethod
    def load(cls, path: str | Path) -> Registry:
        """Open a saved registry; the indexes are memory-mapped, not rebuilt.

        Raises:
            UserError: `path` is not a saved registry.
        """
        folder = Path(path)
        if not (folder / "cards.jsonl").is_file():
            raise UserError(
                f"{folder} is not a registry folder (no cards.jsonl); see Registry.save."
            )
        registry = cls()
        with (folder / "cards.jsonl").open() as f:
            for line in f:
                registry.add(AtomCard(**json.loads(line)))
        if (folder / "bm25").is_dir():
            import bm25s

            registry._bm25 = bm25s.BM25.load(folder / "bm25", mmap=True, show_progress=False)
        if (folder / "hnsw.usearch").is_file():
            import numpy as np
            from usearch.index import Index

            registry._vectors = np.load(folder / "vectors.npy", mmap_mode="r")
            registry._ann = Index.restore(str(folder / "hnsw.usearch"), view=True)
        registry._built = len(registry.cards)
        return registry


def _hnsw(vectors: Any) -> Any:
    import numpy as np
    from usearch.index import Index

    index = Index(ndim=vectors.shape[1], metric="cos", dtype="f32", connectivity=16)
    index.add(np.arange(len(vectors)), vectors)
    return index


def _fuse(*rankings: list[tuple[int, float]]) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, (doc, _) in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


FIND_TOOLS = "find_tools"


def find_tools_tool(registry: Registry, k: int = 5) -> Tool:
    """A tool the model calls to search `registry` when the tools it was offered are not
    enough; the loop then offers the tools found."""

    def find_tools(query: str) -> str:
        hits = registry.search(query, k=k)
        return "\n".join(f"- {h.card.name}: {h.card.description[:160]}" for h in hits)

    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what the tool should do"}},
        "required": ["query"],
    }
    return Tool.from_schema(
        FIND_TOOLS,
        "Search the tool registry for tools that can do something the offered tools cannot.",
        schema,
        find_tools,
        inline=True,
    )


class RegistrySearch:
    """A tool selector (`bigloop.policies.ToolSelector`): the registry's top `k`
    hits for the task, plus `find_tools`; the tools a `find_tools` call finds are offered
    from the next model turn on (`after_call`)."""

    name = "registry_search"

    def __init__(self, registry: Registry, k: int = 5) -> None:
        self.registry = registry
        self.k = k

    def select(self, task: str, specs: list[ToolSpec]) -> list[ToolSpec]:
        by_name = {s.name: s for s in specs}
        hits = self.registry.search(task, k=self.k)
        chosen = [by_name[h.card.name] for h in hits if h.card.name in by_name]
        return [*chosen, *([by_name[FIND_TOOLS]] if FIND_TOOLS in by_name else [])]

    def after_call(self, runner: CallRunner, result: CallResult) -> None:
        """Offer the tools `find_tools` found (before `find_tools` itself)."""
        if not result.ok or result.call.name != FIND_TOOLS:
            return
        offered = {s.name for s in runner.specs}
        for line in result.output.splitlines():
            name = line.split(":", 1)[0].strip("- ").strip()
            if name in runner.catalog and name not in offered:
                runner.specs.insert(len(runner.specs) - 1, runner.catalog[name])
                offered.add(name)
