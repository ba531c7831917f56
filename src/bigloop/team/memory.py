"""An agent's long-term memory: notes kept in a folder, found again by meaning.

Each note is a line of `notes.jsonl` (the record) and a card in a `Registry` (the index),
so recall is the registry's hybrid search — BM25 over the note's words fused with the
embedded MiniLM's vectors — or BM25 alone (`mode="bm25"`: no embedding model needed).
The index is saved beside the notes after each note (in a folder named by the number of
notes, so an index another process has open is never overwritten) and rebuilt from the
notes when it is missing or behind.

    memory = Memory("notes/alice")
    memory.remember("The user's name is Ada and she prefers kilometres.")
    Memory("notes/alice").recall("which units does the user like?", k=1)
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.tool import Tool
from bigloop.registry import Registry, SearchMode

NOTES = "notes.jsonl"
_INDEX = "index-"


class Memory:
    """Notes an agent keeps across runs and processes, searchable by meaning.

    Args:
        folder: where the notes live (created if needed).
        mode: how `recall` searches: "hybrid" (BM25 + dense, the default), "bm25" or
            "dense".
    """

    def __init__(self, folder: str | Path, *, mode: SearchMode = "hybrid") -> None:
        self.folder = Path(folder)
        self.mode = mode
        if self.folder.exists() and not self.folder.is_dir():
            raise UserError(f"Memory folder {self.folder} is a file; pass a folder.")
        self.folder.mkdir(parents=True, exist_ok=True)
        self._notes = _read_notes(self.folder / NOTES)
        self._vectors: Any = None
        self._registry = self._open_index()

    def __len__(self) -> int:
        return len(self._notes)

    @property
    def notes(self) -> list[str]:
        """Every note, oldest first."""
        return list(self._notes)

    def remember(self, text: str) -> None:
        """Keep `text` (a note already kept is not added again)."""
        text = " ".join(text.split())
        if not text or text in self._notes:
            return
        with (self.folder / NOTES).open("a", encoding="utf-8") as f:
            f.write(json.dumps({"text": text, "at": time.time()}, ensure_ascii=False) + "\n")
        self._notes.append(text)
        self._registry.add(_card(len(self._notes) - 1, text))
        if self._dense:
            import numpy as np

            new = self._registry.embedder.encode([text])
            old = self._vectors
            self._vectors = new if old is None else np.vstack([old, new])
        self._build()

    def recall(self, query: str, k: int = 3) -> list[str]:
        """The `k` notes most relevant to `query`, best first."""
        if not self._notes or k <= 0:
            return []
        hits = self._registry.search(query, k=k, mode=self.mode)
        return [h.card.description for h in hits]

    def tools(self) -> list[Tool]:
        """`remember` and `recall` as tools, for an agent that decides itself what to keep."""

        def remember(note: str) -> str:
            self.remember(note)
            return "Noted."

        def recall(query: str) -> str:
            return "\n".join(f"- {n}" for n in self.recall(query)) or "Nothing noted about that."

        def schema(name: str, about: str) -> dict[str, Any]:
            return {
                "type": "object",
                "properties": {name: {"type": "string", "description": about}},
                "required": [name],
            }

        return [
            Tool.from_schema(
                "remember",
                "Keep a note for later conversations (a fact about the user or the task).",
                schema("note", "the fact to keep, as one sentence"),
                remember,
                idempotent=False,
                effect="write",  # a note in the memory file, not the world
            ),
            Tool.from_schema(
                "recall",
                "Search the notes kept in earlier conversations.",
                schema("query", "what to look for"),
                recall,
            ),
        ]

    @property
    def _dense(self) -> bool:
        return self.mode != "bm25"

    def _open_index(self) -> Registry:
        """The saved index when it holds every note, else one built from the notes."""
        saved = self.folder / f"{_INDEX}{len(self._notes)}"
        if self._notes and (saved / "cards.jsonl").is_file():
            registry = Registry.load(saved)
            vectors = saved / "vectors.npy"
            if len(registry) == len(self._notes) and (not self._dense or vectors.is_file()):
                if self._dense:
                    import numpy as np

                    self._vectors = np.load(vectors)
                return registry
        self._registry = Registry()
        self._registry.add_cards(_card(i, text) for i, text in enumerate(self._notes))
        if self._notes:
            if self._dense:
                self._vectors = self._registry.embedder.encode(self._notes)
            self._build()
        return self._registry

    def _build(self) -> None:
        """Index every note and save the index."""
        self._registry.build(dense=self._dense, vectors=self._vectors)
        target = self.folder / f"{_INDEX}{len(self._notes)}"
        self._registry.save(target)
        for old in self.folder.glob(f"{_INDEX}*"):
            if old != target and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)


def _card(i: int, text: str) -> AtomCard:
    return AtomCard(name=f"m{i}", kind="agent", description=text)


def _read_notes(path: Path) -> list[str]:
    if not path.is_file():
        return []
    notes: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            text = json.loads(line)["text"]
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by a crash
        if isinstance(text, str) and text not in notes:
            notes.append(text)
    return notes
