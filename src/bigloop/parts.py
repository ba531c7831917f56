"""The policy registry: every heuristic of the loop, by name, and one way to build them.

A policy is a named part of one of four kinds:

- a call check (`CallCheck`): looks at each call before it is made;
- a tool selector (`ToolSelector`): chooses the tools a task is offered;
- an answer check (`AnswerCheck`): revises the final answer;
- an answer rule (`bigloop.planners.rules.AnswerRule`): judges the final answer before
  the run ends with it — accept, or send it back with a typed problem (every planner and
  the OpenAI-compatible server apply them);
- a planner rule: a step a planner takes on the loop's behalf (answer from the results
  when the model only repeats calls, more calls for the items a request lists, …).

`PARTS` lists them all, with what each does; `Policies.build(off=...)` builds the loop's
policies with the named ones switched off, which is the one way to switch a policy off:
`LoopConfig.off`, `bigloop run --off`, `Loop.from_config`, the BFCL harness and `bigloop
serve openai` all come here. `check_names` refuses a name that is not in the registry,
listing the valid ones.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

from bigloop._errors import UserError
from bigloop.planners.auto import AutoPlanner
from bigloop.planners.code import CodePlanner
from bigloop.planners.graph import GraphPlanner
from bigloop.planners.react import ReactPlanner
from bigloop.planners.rules import ASKED_ABOUT, AnswerRules, default_rules
from bigloop.planners.search import SearchPlanner
from bigloop.policies import (
    AnswerCheck,
    CallCheck,
    ToolSelector,
    default_answer_checks,
    default_checks,
    default_selectors,
)
from bigloop.policies.approval import APPROVAL
from bigloop.policies.clarify import Clarify
from bigloop.policies.more_calls import MoreCalls
from bigloop.policies.select import listed_items
from bigloop.policies.tool_fits import ToolFits
from bigloop.runtime.context import Planner
from bigloop.trace.records import Reason

Kind = Literal["call_check", "tool_selector", "answer_check", "answer_rule", "planner_rule"]
ClarifyWhen = Literal["off", "missing", "ungrounded"]
EscalateWhen = Literal["ungrounded", "unsure"]
PlannerName = Literal["react", "graph", "search", "auto", "code"]
"""The planners a name builds (`Policies.planner`)."""


@dataclass(frozen=True)
class Part:
    """One policy: its name (what `off` takes), its kind, and what it does."""

    name: str
    kind: Kind
    does: str


PARTS: tuple[Part, ...] = (
    Part(
        "tool_fits",
        "call_check",
        "opt-in (LoopConfig.tool_fits): asks the model once whether the tool it called does "
        "what a fresh request asks; if not, the call goes back (answer in words)",
    ),
    Part("coerce_types", "call_check", 'adapts value types to the schema ("3" for 3)'),
    Part(
        "drop_invented_optionals",
        "call_check",
        "omits optional arguments whose values the conversation never mentions",
    ),
    Part(
        "reject_copied_examples",
        "call_check",
        "refuses values copied from a tool's own documentation",
    ),
    Part(
        "faithful_expressions",
        "call_check",
        "refuses an arithmetic argument that computes another value than the request's",
    ),
    Part(
        "clarify",
        "call_check",
        "asks the user for a required value that is missing (or, with clarify=ungrounded, "
        "that appears nowhere in the conversation)",
    ),
    Part(
        "settle",
        "call_check",
        "clarify, after results: ends guessing and asks for the answer from the results",
    ),
    Part(
        APPROVAL,
        "call_check",
        "makes an irreversible call only when approved; off: every such call is made",
    ),
    Part("relevance_gate", "tool_selector", "offers no tool for a request about nothing they do"),
    Part("rank_tools", "tool_selector", "orders the tools by relevance (BM25), keeps top_k"),
    Part("honour_precision", "answer_check", "rounds the answer to the precision asked for"),
    Part(
        "listed_items",
        "planner_rule",
        "auto: a task graph when the request lists several items; graph: one step per item",
    ),
    Part(
        "empty_answer",
        "answer_rule",
        "sends back an answer without a letter or digit",
    ),
    Part(
        "call_as_text",
        "answer_rule",
        "sends back an answer that is a tool call written as text (then asks without tools)",
    ),
    Part(
        "check_answers",
        "answer_rule",
        "sends back, once, an answer with a number no tool returned and nobody said",
    ),
    Part(
        "more_calls",
        "planner_rule",
        "extends a turn's calls while each new one covers another item the request names",
    ),
    Part(
        "ask_after_refusal",
        "answer_rule",
        "when the model gives up on a refused guess, makes the call again: the user is asked",
    ),
    Part(
        "answer_from_results",
        "planner_rule",
        "when a turn only repeats calls (or was told to settle), asks for the answer",
    ),
    Part(
        "use_quantities",
        "answer_rule",
        "sends back, once, an answer that repeats a result while a quantity went into no call",
    ),
)
"""Every policy, in the order the loop applies them within their kind."""

NAMES: tuple[str, ...] = tuple(p.name for p in PARTS)


def check_names(names: Iterable[str]) -> list[str]:
    """`names`, each a registry name.

    Raises:
        UserError: a name is not a policy's; the message lists the valid ones.
    """
    names = list(names)
    if unknown := [n for n in names if n not in NAMES]:
        raise UserError(
            f"Unknown policy name(s) {unknown} in 'off'; choose from {', '.join(NAMES)}."
        )
    return names


@dataclass(frozen=True, kw_only=True)
class PlannerRules:
    """The answer rules and the planner rules, as the planners take them."""

    answer: AnswerRules = field(default_factory=default_rules)
    more_calls: MoreCalls | None = field(default_factory=MoreCalls)
    answer_from_results: bool = True
    items: Callable[[str], list[str]] | None = listed_items


def _copied_asked(asks: Clarify | None) -> frozenset[Reason]:
    """A call refused for copying the docs' example is asked about whenever the loop asks
    at all: the model was told, and a model that insists on "Rome" for a city the user
    never named has no value (measured: the tuned 0.5B answered "Celsius" instead of
    asking for the city, bench/results/ablate/tuned; with clarify="missing" the copy was
    made unasked, bench/results/do_no_harm/README.md)."""
    return frozenset({Reason.COPIED_EXAMPLE}) if asks is not None else frozenset()


@dataclass(kw_only=True)
class Policies:
    """The loop's policies, built (`build`) with some switched off.

    Attributes:
        checks, selectors, answer_checks: in the order the loop applies them.
        rules: the answer rules and the planner rules.
        approve_all: the approval gate is off (every irreversible call is made).
    """

    checks: list[CallCheck]
    selectors: list[ToolSelector]
    answer_checks: list[AnswerCheck]
    rules: PlannerRules
    approve_all: bool = False

    @classmethod
    def build(
        cls,
        off: Collection[str] = (),
        *,
        clarify: ClarifyWhen = "missing",
        top_k: int | None = None,
        tool_fits: bool = False,
    ) -> Policies:
        """The default policies, except those named in `off` (`check_names`).

        Args:
            clarify: when the clarifying check asks ("off": never, which is the same as
                "clarify" in `off`).
            top_k: how many tools `rank_tools` keeps (None: all).
            tool_fits: add the opt-in `tool_fits` check first.
        """
        off = set(check_names(off))
        fits: list[CallCheck] = [ToolFits()] if tool_fits else []
        asks = None
        if clarify != "off" and "clarify" not in off:
            asks = Clarify(ungrounded=clarify == "ungrounded", settle="settle" not in off)
        rules = PlannerRules(
            answer=default_rules(off, ask_about=ASKED_ABOUT | _copied_asked(asks)),
            more_calls=None if "more_calls" in off else MoreCalls(),
            answer_from_results="answer_from_results" not in off,
            items=None if "listed_items" in off else listed_items,
        )
        return cls(
            checks=[c for c in [*fits, *default_checks(asks)] if c.name not in off],
            selectors=[s for s in default_selectors(top_k) if s.name not in off],
            answer_checks=[c for c in default_answer_checks() if c.name not in off],
            rules=rules,
            approve_all=APPROVAL in off,
        )

    def react(self, *, stop_after_calls: bool = False) -> ReactPlanner:
        """The ReAct planner under these rules."""
        return ReactPlanner(
            stop_after_calls=stop_after_calls,
            rules=self.rules.answer,
            more_calls=self.rules.more_calls,
            answer_from_results=self.rules.answer_from_results,
        )

    def planner(self, name: str) -> Planner:
        """The planner `name` ("react", "graph", "search", "auto", "code") under these
        rules."""
        react = self.react()
        items, answer = self.rules.items, self.rules.answer
        planners: dict[str, Callable[[], Planner]] = {
            "react": lambda: react,
            "graph": lambda: GraphPlanner(items=items, rules=answer),
            "search": lambda: SearchPlanner(rules=answer),
            "auto": lambda: (
                AutoPlanner(
                    items=items,
                    one=react,
                    many=GraphPlanner(items=items, rules=answer),
                    code=lambda: CodePlanner(rules=answer),
                )
                if items
                else react
            ),
            "code": lambda: CodePlanner(rules=answer),
        }
        if name not in planners:
            raise UserError(f"Unknown planner {name!r}; use react, graph, search, auto or code.")
        return planners[name]()

    def active(self) -> set[str]:
        """The names of the policies these objects actually apply (what `off` changed)."""
        names = {c.name for c in self.checks} | {s.name for s in self.selectors}
        names |= {c.name for c in self.answer_checks}
        if any(isinstance(c, Clarify) and c.settle for c in self.checks):
            names.add("settle")
        if self.approve_all:
            names.discard(APPROVAL)
        rules = self.rules
        flags = {
            "more_calls": rules.more_calls is not None,
            "answer_from_results": rules.answer_from_results,
            "listed_items": rules.items is not None,
        }
        return names | set(rules.answer.names) | {name for name, on in flags.items() if on}
