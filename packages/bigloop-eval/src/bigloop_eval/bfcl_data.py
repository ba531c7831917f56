"""BFCL's data, read from the `bfcl-eval` package: questions, answers, function docs.

Function docs use BFCL's own types ("dict", "float", "tuple", "any", Java and JavaScript
names); `to_json_schema` turns them into JSON schema a model and a grammar understand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import ToolSpec

SINGLE_TURN = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
]
MULTI_TURN = [
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
]
_TYPES = {
    "dict": "object",
    "object": "object",
    "float": "number",
    "double": "number",
    "number": "number",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "string": "string",
    "str": "string",
    "char": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "tuple": "array",
    "list": "array",
}


@dataclass(kw_only=True)
class Case:
    id: str
    category: str
    messages: list[dict[str, str]]
    functions: list[dict[str, Any]]
    answer: list[dict[str, Any]] | None

    @property
    def language(self) -> str:
        return {"simple_java": "java", "simple_javascript": "javascript"}.get(
            self.category, "python"
        )

    @property
    def tools(self) -> list[ToolSpec]:
        return [
            ToolSpec(
                name=f["name"],
                description=f.get("description", ""),
                parameters=to_json_schema(f.get("parameters", {}), self.language),
            )
            for f in self.functions
        ]


def data_dir() -> Path:
    spec = find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "BFCL data is not installed: `pip install --no-deps bfcl-eval==2026.3.23` "
            "(`make setup` does it)."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def load_cases(category: str, limit: int | None = None) -> list[Case]:
    """The first `limit` cases of a single-turn category, with their possible answers.

    Raises:
        UserError: unknown category, or a data file that cannot be read.
    """
    if category not in SINGLE_TURN:
        known = ", ".join(SINGLE_TURN)
        raise UserError(
            f"Unknown or unsupported BFCL category {category!r}. Choose one of: {known}."
        )
    questions = read_jsonl(data_dir() / f"BFCL_v4_{category}.json", limit)
    answers: dict[str, list[dict[str, Any]]] = {}
    answer_file = data_dir() / "possible_answer" / f"BFCL_v4_{category}.json"
    if answer_file.exists():
        answers = {a["id"]: a["ground_truth"] for a in read_jsonl(answer_file, None)}
    cases = []
    for q in questions:
        turn = q["question"][0]
        cases.append(
            Case(
                id=q["id"],
                category=category,
                messages=turn,
                functions=q["function"],
                answer=answers.get(q["id"]),
            )
        )
    return cases


def all_function_cards() -> list[AtomCard]:
    """Every BFCL function doc, multi-turn simulations included (`bigloop tools build
    --bfcl`, through this package's entry point)."""
    return function_cards(multi_turn=True)


def function_cards(*, multi_turn: bool = False) -> list[AtomCard]:
    """Every distinct BFCL function doc (one per name and description) as a tool card,
    named `name#n`: BFCL reuses a name for functions with different parameters. The
    single-turn files' functions first, then (with `multi_turn`) the simulations' docs."""
    cards: dict[tuple[str, str], AtomCard] = {}

    def add(doc: dict[str, Any], language: str) -> None:
        key = (doc["name"], doc.get("description", ""))
        if key not in cards:
            cards[key] = AtomCard(
                name=f"{doc['name']}#{len(cards)}",
                kind="tool",
                description=key[1],
                input_schema=to_json_schema(doc.get("parameters", {}), language),
            )

    for category in SINGLE_TURN:
        for case in load_cases(category):
            for doc in case.functions:
                add(doc, case.language)
    if multi_turn:
        for path in sorted((data_dir() / "multi_turn_func_doc").glob("*.json")):
            for doc in read_jsonl(path, None):
                add(doc, "python")
    return list(cards.values())


def to_json_schema(node: Any, language: str = "python") -> dict[str, Any]:
    """A BFCL parameter doc as JSON schema. Java/JavaScript values are passed as strings."""
    if not isinstance(node, dict):
        return {}
    raw = str(node.get("type", "")).lower()
    if language != "python" and raw not in ("dict", "object"):
        out: dict[str, Any] = {"type": "string"}
    elif raw in ("any", "") or raw not in _TYPES:
        out = {}
    else:
        out = {"type": _TYPES[raw]}
    if description := node.get("description"):
        out["description"] = description
    if "enum" in node and language == "python":
        out["enum"] = node["enum"]
    if out.get("type") == "object":
        props = node.get("properties", {})
        out["properties"] = {k: to_json_schema(v, language) for k, v in props.items()}
        if node.get("required"):
            out["required"] = [r for r in node["required"] if r in props]
    if out.get("type") == "array" and "items" in node:
        out["items"] = to_json_schema(node["items"], language)
    return out


def read_jsonl(path: Path, limit: int | None) -> list[dict[str, Any]]:
    """The first `limit` rows of one of BFCL's JSON Lines data files (all: None).

    Raises:
        UserError: the file is missing or a line is not JSON.
    """
    if not path.exists():
        raise UserError(f"BFCL data file {path} is missing; reinstall bfcl-eval==2026.3.23.")
    rows: list[dict[str, Any]] = []
    with path.open() as f:
        for number, line in enumerate(f, 1):
            if limit is not None and len(rows) >= limit:
                break
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise UserError(f"{path}:{number} is not valid JSON ({e.msg}).") from None
    return rows
