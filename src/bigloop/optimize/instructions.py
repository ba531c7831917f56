"""Instructions proposed by reflection (GEPA-style, without gradients): a model reads the
current instructions and runs that went wrong with their critiques, and writes new
instructions; candidates are kept in a Pareto pool — every candidate that is best on at
least one dev example stays, and the next parent is drawn from them in proportion to how
many examples each wins — so instructions that win on different examples all survive.
Two front candidates that win on different examples are then merged (`merge`, `pair`):
their rules taken in turn into one list, scored on dev, and chosen only if no candidate
scores higher."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest

from bigloop.atoms.models.base import ChatModel, Message, ModelSettings
from bigloop.optimize.bench import Example, Outcome
from bigloop.optimize.evaluate import Scores

REFLECT = """\
You improve the instructions given to an assistant that answers requests by calling \
tools (functions) with JSON arguments.

Current instructions:
{current}

Requests it got wrong, each with what went wrong:
{failures}

Do not answer the requests. Write up to five short general rules for the assistant \
that would avoid these kinds of mistakes on other requests too: how to choose functions \
and how to write argument values (formats, units, which values to leave out). No rule \
may mention a particular request, function or value."""

_DIRECTIONS = REFLECT.split("{failures}", 1)[1]  # what the reflector is told to do

SCHEMA = {
    "type": "object",
    "properties": {
        "rules": {
            "type": "array",
            "items": {"type": "string", "minLength": 10, "maxLength": 200},
            "minItems": 1,
            "maxItems": 5,
        }
    },
    "required": ["rules"],
}
SETTINGS = ModelSettings(temperature=0.7, max_tokens=300, response_schema=SCHEMA)
NO_INSTRUCTIONS = "(none: only the tool list and the reply format)"


def reflection_prompt(current: str | None, failures: Sequence[tuple[Example, Outcome]]) -> str:
    shown = "\n\n".join(
        f"Request: {example.task[:400]}\nWhat went wrong: {outcome.critique or 'wrong result'}"
        for example, outcome in failures
    )
    return REFLECT.format(current=current or NO_INSTRUCTIONS, failures=shown)


async def propose(model: ChatModel, prompt: str, *, seed: int = 0) -> str | None:
    """New instructions from `prompt` (`reflection_prompt`): the model's rules, one per
    line; None when it gave nothing usable — no rules, or rules that copy a request
    shown in the prompt or the prompt's own directions (small models tend to echo what
    they read instead of reflecting)."""
    settings = dataclasses.replace(SETTINGS, seed=seed)
    response = await model.chat([Message(role="user", content=prompt)], [], settings)
    try:
        rules = [" ".join(str(r).split()) for r in json.loads(response.text)["rules"]]
    except (ValueError, KeyError, TypeError):
        return None
    requests = [
        line[len("Request: ") :] for line in prompt.splitlines() if line.startswith("Request: ")
    ]
    echoes = [*requests, _DIRECTIONS]
    rules = [r for r in rules if len(r) >= 10 and not any(_copies(r, q) for q in echoes)]
    if not rules:
        return None
    return "Rules:\n" + "\n".join(f"- {r}" for r in dict.fromkeys(rules))


def _copies(rule: str, request: str) -> bool:
    """Whether `rule` is mostly words of `request` (an echo, not a rule)."""
    words = rule.lower().split()
    said = set(request.lower().split())
    return len(words) >= 4 and sum(w in said for w in words) / len(words) > 0.6


@dataclass(kw_only=True)
class Candidate:
    instructions: str | None
    scores: Scores


class ParetoPool:
    """Candidates and their dev outcomes; the front is every candidate that is best on
    at least one example."""

    def __init__(self) -> None:
        self.candidates: list[Candidate] = []

    def add(self, candidate: Candidate) -> None:
        self.candidates.append(candidate)

    def wins(self) -> list[int]:
        """Per candidate, the examples on which no other candidate scores higher (ties
        count for each)."""
        counts = [0] * len(self.candidates)
        ids = {i for c in self.candidates for i in c.scores.outcomes}
        for example_id in ids:
            scores = [
                c.scores.outcomes[example_id].score if example_id in c.scores.outcomes else 0.0
                for c in self.candidates
            ]
            best = max(scores)
            if best <= 0:
                continue
            for k, s in enumerate(scores):
                if s == best:
                    counts[k] += 1
        return counts

    def front(self) -> list[Candidate]:
        return [c for c, w in zip(self.candidates, self.wins(), strict=True) if w > 0]

    def pick(self, rng: random.Random) -> Candidate:
        """A parent: a front candidate, drawn in proportion to its wins."""
        wins = self.wins()
        if not any(wins):
            return self.candidates[0]
        return rng.choices(self.candidates, weights=wins, k=1)[0]

    def best(self) -> Candidate:
        """The candidate with the highest mean dev score (the earliest on ties)."""
        return max(self.candidates, key=lambda c: c.scores.mean)

    def pair(self) -> tuple[Candidate, Candidate] | None:
        """The two front candidates with rules that complement each other most: each
        right on some dev example the other gets wrong, the pair right on the most
        examples together; None when no two do."""
        front = [c for c in self.front() if rules_of(c.instructions)]
        best: tuple[int, tuple[Candidate, Candidate]] | None = None
        for i, a in enumerate(front):
            for b in front[i + 1 :]:
                right_a, right_b = _right(a), _right(b)
                if right_a <= right_b or right_b <= right_a:
                    continue  # one covers the other: nothing to gain by merging
                union = len(right_a | right_b)
                if best is None or union > best[0]:
                    best = (union, (a, b))
        return best[1] if best else None


def _right(candidate: Candidate) -> set[str]:
    return {k for k, o in candidate.scores.outcomes.items() if o.score >= 1}


def rules_of(instructions: str | None) -> list[str]:
    """The rules of instructions written by `propose` ("Rules:" then "- rule" lines)."""
    if not instructions or not instructions.startswith("Rules:\n"):
        return []
    return [line[2:] for line in instructions.splitlines()[1:] if line.startswith("- ")]


def merge(a: str | None, b: str | None, *, limit: int = 8) -> str | None:
    """GEPA's merge for a single instruction block: the rules of `a` and `b` taken in
    turn, each once, at most `limit`; None when either has no rules or nothing is new."""
    first, second = rules_of(a), rules_of(b)
    if not first or not second:
        return None
    turns = [r for pair in zip_longest(first, second) for r in pair if r is not None]
    joined = list(dict.fromkeys(turns))[:limit]
    if joined == first or joined == second:
        return None
    return "Rules:\n" + "\n".join(f"- {r}" for r in joined)
