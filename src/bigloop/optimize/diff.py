"""What changed between two configs (`bigloop optimize diff A B`): each field that
differs, demonstrations and tool docs item by item, and B's accepted changes from its
provenance."""

from __future__ import annotations

import json
from typing import Any

from bigloop.config import LoopConfig


def config_diff(a: LoopConfig, b: LoopConfig) -> list[str]:
    """Lines saying what B changes from A ("- x" removed, "+ x" added, "~ f: a → b")."""
    lines: list[str] = []
    left = a.model_dump(mode="json", exclude={"provenance"})
    right = b.model_dump(mode="json", exclude={"provenance"})
    for field in LoopConfig.model_fields:
        if field == "provenance" or left.get(field) == right.get(field):
            continue
        if field == "demos":
            before = {d["task"]: d for d in left["demos"]}
            after = {d["task"]: d for d in right["demos"]}
            lines += [f"- demo: {t}" for t in before if t not in after]
            lines += [f"+ demo: {t} -> {_short(after[t])}" for t in after if t not in before]
            lines += [
                f"~ demo: {t}: {_short(before[t])} → {_short(after[t])}"
                for t in after
                if t in before and before[t] != after[t]
            ]
            common = [t for t in after if t in before]
            if common != [t for t in before if t in after]:
                lines.append("~ demos reordered")
        elif field == "tool_docs":
            for name in sorted(left["tool_docs"].keys() | right["tool_docs"].keys()):
                x, y = left["tool_docs"].get(name), right["tool_docs"].get(name)
                if x != y:
                    lines.append(f"~ doc of {name}: {x!r} → {y!r}")
        else:
            lines.append(f"~ {field}: {_short(left.get(field))} → {_short(right.get(field))}")
    for change in (b.provenance or {}).get("changes", []):
        lines.append(
            f"  (B's provenance: {change['step']}: dev {change['dev_before']:.0%} → "
            f"{change['dev_after']:.0%})"
        )
    return lines


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."
