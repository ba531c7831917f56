"""AtomCard: what scheduling needs to know about any atom."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

AtomKind = Literal["tool", "model", "agent", "loop"]


@dataclass(kw_only=True)
class AtomCard:
    """Name, kind, description, schemas and scheduling properties of an atom.

    Attributes:
        cost: cost of one call (any currency unit, used consistently).
        cost_per_token: cost of one prompt or completion token (models).
        privacy: "local" when no data leaves the machine, otherwise who receives it.
        reliability: observed or declared success rate in [0, 1].
    """

    name: str
    kind: AtomKind
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] = field(default_factory=dict)
    cost: float = 0.0
    cost_per_token: float = 0.0
    latency_s: float | None = None
    privacy: str = "local"
    reliability: float = 1.0
