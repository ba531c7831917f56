"""Redaction: secrets never reach a trace file, the terminal or a report.

A `Redactor` replaces with `[REDACTED]`:

- declared values (`Redactor(["hunter2-prod"])`, `Loop(secrets=[...])`), also as they
  appear URL-encoded;
- the values of environment variables named like secrets (`Redactor.from_env()`:
  `OPENAI_API_KEY`, `GITHUB_TOKEN`, `DB_PASSWORD`, ...);
- credentials in URLs (`https://user:pass@host`, `?api_key=...`, `&token=...`);
- common key formats (`sk-...`, `ghp_...`, `AKIA...`, `xoxb-...`, `AIza...`, `hf_...`,
  JWTs, `Bearer ...`, PEM private keys);
- values assigned to secret-looking names (`password=...`, `"api_key": "..."`), in text
  and in structured data (a tool argument named `password`).

It is pure: the same input gives the same output, and redacting twice changes nothing
more. Records (`Step`, `RunResult`, `Message`) are copied, never changed in place, so a
running loop keeps the real values; only what is written or shown is redacted. A resumed
run therefore sees `[REDACTED]` where a stored value was a secret.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, cast
from urllib.parse import quote

from bigloop._errors import UserError
from bigloop.atoms.models.base import Message, ToolCall
from bigloop.trace.records import Question, Refusal, RunResult, Step, StepError

REDACTED = "[REDACTED]"

MIN_SECRET_CHARS = 4
"""A shorter declared value would redact ordinary text."""
MAX_DEPTH = 100
TOO_DEEP = f"{REDACTED} (nested too deep to check)"

_SECRET_NAME = (
    r"(?:api[_-]?key|apikey|secret|secret[_-]?key|client[_-]?secret|token|access[_-]?token|"
    r"auth[_-]?token|refresh[_-]?token|password|passwd|passphrase|pwd|access[_-]?key|"
    r"private[_-]?key|credentials?)"
)
_NAME = re.compile(rf"(?i)^(?:[a-z0-9]+[_.-])*{_SECRET_NAME}$")
"""A key, parameter or variable name that holds a secret: `api_key`, `DB_PASSWORD`,
`x-auth-token` (but not `max_tokens` or `token_count`)."""
_ENV_NAME = re.compile(
    r"(?i)(?:api[_-]?key|secret|token|password|passwd|access[_-]?key|private[_-]?key|"
    r"credentials?)"
)
_ENV_MIN_CHARS = 8
"""Shorter values of secret-looking environment variables are flags, not secrets."""

_SAID = (
    r"(?i)\b((?:password|passphrase|passcode|passwd|pin code|api[ _-]?key|secret key|"
    r"access token)\s+(?:is|was)\s*:?\s+"
)
_PROSE = re.compile(
    _SAID + r"(?:([\"'“])(?!\[REDACTED\])([^\"'”\n]{1,200})[\"'”]|"
    r"(?!\[REDACTED\])([^\s\"'”,;]+?)(?=[.!?]?(?:\s|$|[,;]))))"
)
"""A secret said in words: "my password is hunter22", "the API key is abc-123."."""
_BASIC = re.compile(r"\b([Bb]asic\s+)([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")


def _basic_credentials(match: re.Match[str]) -> str:
    """`Basic <base64 of user:password>` redacted; "basic arithmetic" left alone."""
    try:
        decoded = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(1) + REDACTED if b":" in decoded else match.group(0)


_PATTERNS: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    # PEM private keys, whole.
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
        REDACTED,
    ),
    # scheme://user:password@host, scheme://token@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@"), rf"\1{REDACTED}@"),
    # ?api_key=..., &token=..., ;password=...
    (
        re.compile(
            rf"(?i)([?&;](?:[a-z0-9]+[_.-])*(?:{_SECRET_NAME}|key|sig|signature)=)[^&#\s\"'<>]+"
        ),
        rf"\1{REDACTED}",
    ),
    # password=..., "api_key": "...", DB_PASSWORD: ...
    (
        re.compile(
            rf"(?i)\b((?:[a-z0-9]+[_.-])*{_SECRET_NAME}[\"']?\s*[:=]\s*[\"']?)"
            r"(?!\[REDACTED\])[^\s\"',;&}\]]+"
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"(?i)\b(bearer\s+)[a-z0-9._~+/=-]{12,}"), rf"\1{REDACTED}"),
    (_BASIC, _basic_credentials),
    (_PROSE, lambda m: m.group(0).replace(m.group(3) or m.group(4), REDACTED)),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),  # OpenAI, Anthropic (sk-ant-...)
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),  # GitHub
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), REDACTED),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), REDACTED),  # GitLab
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),  # AWS access key ids
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), REDACTED),  # Slack
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), REDACTED),  # Google
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), REDACTED),  # Hugging Face
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
)


class Redactor:
    """Replaces secrets with `[REDACTED]` in text, data and run records.

    Args:
        values: the secret values to redact wherever they appear.
        patterns: also redact URL credentials, common key formats and values assigned to
            secret-looking names.

    Raises:
        UserError: a declared value is shorter than 4 characters (it would redact
            ordinary text).
    """

    __slots__ = ("patterns", "values")

    def __init__(self, values: Iterable[str] = (), *, patterns: bool = True) -> None:
        declared = {v for v in values if v}
        if short := [v for v in declared if len(v) < MIN_SECRET_CHARS]:
            raise UserError(
                f"{len(short)} declared secret(s) shorter than {MIN_SECRET_CHARS} characters "
                "would redact ordinary text; declare longer values."
            )
        forms = declared | {quote(v, safe="", errors="replace") for v in declared}
        self.values: tuple[str, ...] = tuple(sorted(forms, key=lambda v: (-len(v), v)))
        """Every form of every declared value, longest first."""
        self.patterns = patterns

    def __repr__(self) -> str:  # never the values themselves
        return f"Redactor({len(self.values)} values, patterns={self.patterns})"

    @classmethod
    def from_env(
        cls, names: Iterable[str] | None = None, environ: Mapping[str, str] | None = None
    ) -> Redactor:
        """A redactor of the values of environment variables: those in `names`, or, with
        None, every variable named like a secret (`*_API_KEY`, `*TOKEN*`, `*SECRET*`,
        `*PASSWORD*`, ...) whose value has at least 8 characters."""
        env = os.environ if environ is None else environ
        if names is not None:
            return cls(tuple(env[n] for n in names if env.get(n)))
        found = (v for k, v in env.items() if _ENV_NAME.search(k) and len(v) >= _ENV_MIN_CHARS)
        return cls(tuple(found))

    def adding(self, values: Iterable[str]) -> Redactor:
        """This redactor, also redacting `values`."""
        return Redactor((*self.values, *values), patterns=self.patterns)

    def learning(self, value: Any) -> Redactor:
        """This redactor, also redacting wherever they appear the strings `value` holds
        under secret-looking keys ("password": "hunter22"): redacted under the key, such
        a value must not be stored verbatim in a tool's result or the answer either."""
        if not self.patterns:
            return self
        found = {s for s in _under_secret_keys(value) if len(s) >= MIN_SECRET_CHARS}
        new = found - set(self.values)
        return self.adding(new) if new else self

    def text(self, text: str) -> str:
        """`text` with every secret replaced."""
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        if self.patterns:
            for pattern, replacement in _PATTERNS:
                text = pattern.sub(replacement, text)
        return text

    def value(self, value: Any, _depth: int = 0) -> Any:
        """JSON-like data (strings, lists, dicts) with every secret replaced; a string
        under a secret-looking key ("password", "api_key") is replaced whole, and data
        nested more than 100 levels deep (a model's runaway) whole, unread."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict | list | tuple) and _depth >= MAX_DEPTH:
            return TOO_DEEP
        if isinstance(value, dict):
            return {k: self._item(k, v, _depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, _depth + 1) for v in value]
        return value

    def _item(self, key: Any, value: Any, depth: int) -> Any:
        if self.patterns and isinstance(key, str) and isinstance(value, str) and value:
            if _NAME.match(key):
                return REDACTED
        return self.value(value, depth)

    def message(self, message: Message) -> Message:
        """A copy of `message`, redacted (its text and its calls' arguments)."""
        calls = [
            ToolCall(id=c.id, name=c.name, arguments=self.value(c.arguments))
            for c in message.tool_calls
        ]
        return replace(message, content=self.text(message.content), tool_calls=calls)

    def step(self, step: Step) -> Step:
        """A copy of `step`, redacted (input, output, error and message)."""
        return replace(
            step,
            input=self.value(step.input),
            output=self.value(step.output),
            error=None if step.error is None else cast(StepError, self.text(step.error)),
            message=None if step.message is None else self.message(step.message),
            refusal=None if step.refusal is None else self.refusal(step.refusal),
            question=None if step.question is None else self.question(step.question),
        )

    def refusal(self, refusal: Refusal) -> Refusal:
        """A copy of `refusal`, redacted (the values and details it quotes)."""
        return replace(
            refusal, values=self.value(refusal.values), detail=self.value(refusal.detail)
        )

    def question(self, question: Question) -> Question:
        """A copy of `question`, redacted (its text and the call it is about)."""
        call = question.call
        if call is not None:
            call = replace(call, arguments=self.value(call.arguments))
        return replace(question, text=self.text(question.text), call=call)

    def result(self, result: RunResult) -> RunResult:
        """A copy of `result`, redacted (task, answer, error, question, steps, messages)."""
        return replace(
            result,
            task=self.text(result.task),
            answer=None if result.answer is None else self.text(result.answer),
            error=None if result.error is None else self.text(result.error),
            question=None if result.question is None else self.text(result.question),
            steps=[self.step(s) for s in result.steps],
            messages=[self.message(m) for m in result.messages],
        )


def _under_secret_keys(value: Any, depth: int = 0) -> list[str]:
    """The strings under secret-looking keys anywhere in JSON-like `value`, and the
    secrets its text says in words ("my password is ...")."""
    if depth >= MAX_DEPTH:
        return []
    if isinstance(value, str):
        return [m.group(3) or m.group(4) for m in _PROSE.finditer(value)]
    if isinstance(value, dict):
        found = []
        for k, v in value.items():
            if isinstance(k, str) and isinstance(v, str) and v and _NAME.match(k):
                found.append(v)
            else:
                found += _under_secret_keys(v, depth + 1)
        return found
    if isinstance(value, list | tuple):
        return [s for v in value for s in _under_secret_keys(v, depth + 1)]
    return []
