"""Atom selection helpers: lexical relevance of tools to a task, and the items a task
lists.

Small models favour the first tool listed, so the loop orders tools by their lexical
relevance to the task (BM25 over name, description and parameter names; the `RankTools`
and `RelevanceGate` policies use it). This is the in-prompt ordering for a few dozen
tools; retrieval over large registries is `bigloop.registry`.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from bigloop.atoms.models.base import ToolSpec

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by do does for from how i in is it its me my of on or the this "
    "that to was what when where which who with you your".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased word stems without stop words; a plural s is dropped."""
    words = _WORD.findall(text.lower())
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words if w not in _STOP]


def tool_text(spec: ToolSpec) -> str:
    params = " ".join(spec.parameters.get("properties", {}))
    return f"{spec.name.replace('_', ' ')} {spec.name} {spec.description} {params}"


def rank_tools(
    query: str, tools: list[ToolSpec], k1: float = 1.2, b: float = 0.75
) -> list[ToolSpec]:
    """`tools` ordered by BM25 relevance to `query`; ties keep their given order."""
    if len(tools) < 2:
        return list(tools)
    docs = [Counter(terms(tool_text(t))) for t in tools]
    avg_len = sum(sum(d.values()) for d in docs) / len(docs)
    df = Counter(term for d in docs for term in d)
    n = len(docs)
    wanted = set(terms(query))

    def score(doc: Counter[str]) -> float:
        length = sum(doc.values())
        total = 0.0
        for term in wanted & doc.keys():
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            tf = doc[term]
            total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len))
        return total

    scores = [score(d) for d in docs]
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    return [tools[i] for i in order]


_NAME = r"[A-Z][\w'-]*(?:\s[A-Z][\w'-]*)*"
_SEP = r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|vs\.?)\s+)"
_LIST = re.compile(rf"{_NAME}(?:{_SEP}{_NAME})+")


def listed_items(task: str) -> list[str]:
    """The names a task enumerates ("Tokyo, Oslo and Cairo" → three), or [] when it lists
    none. The graph planner asks for at least one step per listed item; the auto planner
    chooses the graph planner when there are several."""
    found = max(_LIST.findall(task), key=len, default="")
    items = [i.strip() for i in re.split(_SEP, found) if i.strip()]
    return items if len(items) >= 2 else []
