"""The embedded local model: llama-cpp-python, with calls constrained by a JSON grammar.

The offered tools become a JSON schema (`{"tool_calls": [one of the tools' call shapes]}`
or `{"answer": "..."}`) and then a llama.cpp grammar, so every reply parses: a tool name
that was offered, arguments shaped like its schema, or a final answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from bigloop._errors import InvalidToolSchema, ModelBusy, ModelUnavailable, UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
    Usage,
)
from bigloop.atoms.models.parse import to_response
from bigloop.atoms.models.prefix_cache import PrefixStates, Warmth, common_prefix
from bigloop.atoms.models.prompts import render_call_reply, to_plain_chat
from bigloop.atoms.models.rates import Rates
from bigloop.atoms.models.runaway import Runaway
from bigloop.atoms.schema import grammar_safe

_GRAMMAR_CACHE = 32
_LOADED: dict[tuple[str, int, int, str | None], Any] = {}
_LOAD_LOCK = threading.Lock()
_RATES: dict[tuple[str, int, int], Rates | None] = {}
_IN_USE: dict[int, threading.Lock] = {}
"""One lock per loaded model (by `id`): every `LocalModel` of the same file shares its
llama.cpp context, and only one completion may run in it at a time."""
_CONTEXT: dict[int, list[int]] = {}
"""The tokens each loaded model held after its last completion (by `id` of the model): a
turn's new tokens are those past what it shares with them."""


FAST_GRAMMAR = os.environ.get("BIGLOOP_FAST_GRAMMAR", "on") != "off"
"""Greedy turns check the grammar on the best tokens first (`TopFirstGrammar`);
`$BIGLOOP_FAST_GRAMMAR=off` applies it to the whole vocabulary, as llama-cpp-python does."""


@contextlib.contextmanager
def _sampling(llama: Any, grammar: Any, settings: ModelSettings) -> Iterator[dict[str, Any]]:
    """The completion's grammar arguments: greedy turns get `TopFirstGrammar`, the same
    choice at a fraction of the cost; sampled turns llama-cpp-python's own grammar."""
    if grammar is None or settings.temperature != 0 or not FAST_GRAMMAR:
        yield {"grammar": grammar}
        return
    import llama_cpp

    from bigloop.atoms.models.fast_grammar import TopFirstGrammar

    fast = TopFirstGrammar(llama, grammar)
    try:
        yield {"logits_processor": llama_cpp.LogitsProcessorList([fast])}
    finally:
        fast.close()


def _confidence(sampling: dict[str, Any]) -> float | None:
    """The confidence `_sampling`'s fast grammar kept (None: it did not sample)."""
    from bigloop.atoms.models.fast_grammar import TopFirstGrammar

    found = [p for p in sampling.get("logits_processor") or [] if isinstance(p, TopFirstGrammar)]
    return found[0].confidence if found else None


def _forget_stale(llama: Any) -> None:
    """Blank the token ids past what `llama`'s KV cache holds. llama-cpp-python matches a
    new prompt against its whole token buffer, not only the first `n_tokens`, so ids left
    there by an earlier, longer completion could count as cached although they are not;
    the next turn then decodes from a cache it does not have (garbage replies, seen after
    a continued reply: '><the answer>')."""
    llama._input_ids[llama.n_tokens :] = -1


def _keep_prompt(llama: Any, n: int) -> None:
    """Drop from `llama`'s KV cache what the last completion generated, keeping its first
    `n` tokens (the prompt). The next turn then reads the reply again, in one batch with
    what is new, as it did before the cache was kept between turns: the cache entries of
    tokens decoded one at a time differ numerically from a batch's, enough to flip a greedy
    choice (measured: "What is (45 + 12) / 3?" answered '><the answer>' after a
    continued reply when they were reused, 19 when read again)."""
    if llama.n_tokens > n and llama._ctx.kv_cache_seq_rm(-1, n, -1):
        llama.n_tokens = n
    _forget_stale(llama)


def call_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """The JSON schema every reply must satisfy when `tools` are offered."""
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    if not tools:
        return answer
    calls = {
        "type": "object",
        "properties": {
            "tool_calls": {"type": "array", "items": one_call_schema(tools), "minItems": 1}
        },
        "required": ["tool_calls"],
        "additionalProperties": False,
    }
    return {"anyOf": [calls, answer]}


def one_call_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """The JSON schema of one call of one of `tools`."""
    shapes = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": grammar_safe(t.parameters)},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    return shapes[0] if len(shapes) == 1 else {"anyOf": shapes}


class LocalModel:
    """A GGUF model run in-process by llama-cpp-python, loaded once per process.

    Args:
        path: a GGUF file; None means the embedded default (Qwen2.5-Coder-0.5B-Instruct).
        n_ctx: context window in tokens.
        n_threads: CPU threads; defaults to the number of cores.
        grammar: constrain replies to the call/answer schema (recommended).
        name: the model's name in traces (default: the file's name).
        max_waiting: requests that may wait for the model while it serves another (one
            model in a process serves one request at a time; servers queue the rest); one
            more raises `ModelBusy` (a server's 503).
        prefix_cache: keep the state of each prompt's fixed prefix (system prompt and
            tool schemas) on disk, so a new process skips evaluating it (`PrefixStates`):
            True uses `$BIGLOOP_PREFIX_CACHE` ("off" turns it off) or the user cache
            folder, a path another folder, False turns it off.
        lora: a GGUF LoRA adapter applied over the model (`bigloop optimize --step
            finetune` makes one); a model with and without it are loaded separately.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        grammar: bool = True,
        prefix_cache: bool | str | Path = True,
        name: str | None = None,
        max_waiting: int = 64,
        lora: str | Path | None = None,
    ) -> None:
        if path is not None and not Path(path).is_file():
            raise UserError(f"Model file {path} does not exist. Pass the path of a .gguf file.")
        _needs_llama_cpp()
        if lora is not None and not Path(lora).is_file():
            raise UserError(f"Adapter file {lora} does not exist. Pass a GGUF LoRA file.")
        self._path = Path(path) if path is not None else None
        self._lora = Path(lora) if lora is not None else None
        self._name = name
        self._n_ctx = n_ctx
        self._n_threads = n_threads or os.cpu_count() or 2
        self._grammar = grammar
        self._grammars: OrderedDict[str, Any] = OrderedDict()
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._max_waiting = max_waiting
        self._ids = itertools.count(1)
        self._prefix_folder: Path | None = None
        if prefix_cache is True:
            from platformdirs import user_cache_path

            where = os.environ.get("BIGLOOP_PREFIX_CACHE", "")
            if where != "off":
                self._prefix_folder = (
                    Path(where) if where else user_cache_path("bigloop") / "prefix-states"
                )
        elif prefix_cache is not False:
            self._prefix_folder = Path(prefix_cache)
        self._prompts: tuple[PrefixStates, Any] | None = None
        self._template: Any = None
        self._probes: dict[str, list[int]] = {}
        self.last_warmth: Warmth | None = None
        """How the last completion's fixed prefix was obtained (see `PrefixStates.warm`)."""
        self.last_confidence: float | None = None
        """The last completion's confidence (`TopFirstGrammar.confidence`; None when it
        was not a greedy grammar-constrained one)."""

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Wait for the model (at most `max_waiting` may wait), then hold it."""
        if self._lock.locked() and self._waiting >= self._max_waiting:
            raise ModelBusy(
                f"{self.name} is busy: {self._waiting} requests are already waiting; retry later"
            )
        self._waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._lock.release()

    @property
    def waiting(self) -> int:
        """Requests waiting for the model now."""
        return self._waiting

    @property
    def name(self) -> str:
        if self._name:
            return self._name
        base = self._path.name if self._path else "qwen2.5-coder-0.5b-instruct (embedded)"
        return f"{base} + {self._lora.name}" if self._lora else base

    @property
    def card(self) -> AtomCard:
        return AtomCard(
            name=self.name,
            kind="model",
            description="local GGUF model run by llama.cpp",
            privacy="local",
            cost=0.0,
        )

    def llama(self) -> Any:
        """The loaded `llama_cpp.Llama`, loading it on first use (once per process)."""
        from bigloop.atoms.models.weights import default_model_path

        path = str(self._path or default_model_path())
        lora = str(self._lora) if self._lora else None
        key = (path, self._n_ctx, self._n_threads, lora)
        with _LOAD_LOCK:
            if key not in _LOADED:
                from bigloop.atoms.models.cpu import check_this_machine

                if problem := check_this_machine():
                    raise ModelUnavailable(problem)
                try:
                    import llama_cpp
                except ImportError:
                    raise UserError(
                        "llama-cpp-python is not installed; install `bigloop[local]` "
                        "(or run `make setup`) to use the embedded model."
                    ) from None
                from llama_cpp._utils import suppress_stdout_stderr

                try:
                    # llama.cpp writes a line per adapter tensor to stderr, whatever verbose
                    with suppress_stdout_stderr(disable=lora is None):
                        _LOADED[key] = llama_cpp.Llama(
                            model_path=path,
                            n_ctx=self._n_ctx,
                            n_threads=self._n_threads,
                            lora_path=lora,
                            verbose=False,
                        )
                except ValueError as e:
                    raise ModelUnavailable(f"Could not load {path}: {e}") from None
                _IN_USE[id(_LOADED[key])] = threading.Lock()
            return _LOADED[key]

    def count_tokens(self, text: str) -> int:
        """How many tokens `text` is for this model."""
        return len(self.llama().tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def rates(self) -> Rates | None:
        """This machine's prompt and generation rates for this model (measured once per
        model file, threads, llama.cpp build and CPU tier, then cached; None with
        `$BIGLOOP_RATES=off`)."""
        llama = self.llama()
        key = (str(llama.model_path), self._n_ctx, self._n_threads)
        with _LOAD_LOCK:
            if key not in _RATES:
                _RATES[key] = None
                if os.environ.get("BIGLOOP_RATES") != "off":
                    import llama_cpp

                    from bigloop.atoms.models import cpu
                    from bigloop.atoms.models.rates import cached
                    from bigloop.atoms.models.weights import cache_dir

                    variant = cpu.recorded()
                    path = Path(llama.model_path)
                    name = f"{path.name}:{path.stat().st_size}:{self._n_threads}:"
                    name += f"{llama_cpp.__version__}:{variant.name if variant else '?'}"
                    _RATES[key] = cached(llama, name, cache_dir())
            return _RATES[key]

    def _account(
        self,
        llama: Any,
        usage: dict[str, Any],
        start: float,
        *,
        fixed: int = 0,
        guard: Runaway | None = None,
    ) -> Usage:
        """The turn's `Usage` with its latency account (see `Usage`); `fixed`: the prompt
        tokens a warm start had on disk."""
        import llama_cpp

        seconds = time.perf_counter() - start
        perf = llama_cpp.llama_perf_context(llama._ctx.ctx)
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        completion = int(usage.get("completion_tokens", 0))
        held = [int(t) for t in llama.input_ids[: llama.n_tokens]]
        before = _CONTEXT.get(id(llama), [])
        _CONTEXT[id(llama)] = held
        prompt = held[:prompt_tokens]
        new = prompt_tokens - max(fixed, common_prefix(prompt, before))
        _keep_prompt(llama, prompt_tokens)
        rates = _RATES.get((str(llama.model_path), self._n_ctx, self._n_threads))
        return Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion,
            seconds=seconds,
            prompt_seconds=perf.t_p_eval_ms / 1000,
            generation_seconds=perf.t_eval_ms / 1000,
            prompt_evaluated=int(perf.n_p_eval),
            prompt_new=new,
            floor_seconds=rates.floor(new, completion) if rates else 0.0,
            runaway=int(guard is not None and guard.cut),
        )

    def _guard(
        self, llama: Any, start: int | None = None, stop: Callable[[str], bool] | None = None
    ) -> Runaway:
        def text(tokens: list[int]) -> str:
            return bytes(llama.detokenize(tokens)).decode("utf-8", "replace")

        return Runaway(start=start, text=text, stop=stop)

    def grammar_for(self, tools: list[ToolSpec]) -> Any:
        return self.grammar_for_schema(call_schema(tools))

    def grammar_for_schema(self, schema: dict[str, Any]) -> Any:
        """A llama.cpp grammar accepting exactly the JSON values `schema` allows (cached)."""
        from llama_cpp.llama_grammar import LlamaGrammar

        key = json.dumps(schema, sort_keys=True)
        if key in self._grammars:
            self._grammars.move_to_end(key)
        else:
            # Bounded: an eval offers new tools every case and would otherwise keep them all.
            while len(self._grammars) >= _GRAMMAR_CACHE:
                self._grammars.popitem(last=False)
            # Not sorted: the grammar keeps property order, and "name" must come first.
            try:
                grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            except (AssertionError, AttributeError, KeyError, TypeError, ValueError) as e:
                raise InvalidToolSchema(
                    f"A tool's argument schema cannot constrain the model "
                    f"({type(e).__name__}: {str(e)[:200]}); give each parameter a JSON-schema "
                    'type ("string", "integer", "object", ...).'
                ) from None
            except RecursionError:
                raise InvalidToolSchema(
                    "A tool's argument schema is nested too deeply to constrain the model."
                ) from None
            self._grammars[key] = grammar
        return self._grammars[key]

    def complete_chat(
        self,
        chat: list[dict[str, str]],
        *,
        settings: ModelSettings,
        grammar: Any = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> tuple[str, Usage]:
        """One blocking chat completion; the raw text and its usage."""
        llama = self.llama()
        with _IN_USE[id(llama)]:
            return self._complete_chat(llama, chat, settings, grammar, tools)

    def _complete_chat(
        self,
        llama: Any,
        chat: list[dict[str, str]],
        settings: ModelSettings,
        grammar: Any,
        tools: list[dict[str, Any]] | None,
    ) -> tuple[str, Usage]:
        import llama_cpp

        self.rates()
        llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
        start = time.perf_counter()
        prompts = self._prompt_states(llama)
        fixed = 0
        try:
            if prompts is None:
                guard = None  # create_chat_completion takes no stopping criteria
                _forget_stale(llama)
                with _sampling(llama, grammar, settings) as sampling:
                    out = llama.create_chat_completion(
                        messages=chat,
                        tools=tools,
                        temperature=settings.temperature,
                        max_tokens=settings.max_tokens,
                        seed=settings.seed,
                        **sampling,
                    )
                self.last_confidence = _confidence(sampling)
                text = out["choices"][0]["message"].get("content") or ""
            else:
                out, fixed, guard = self._complete_warm(
                    llama, prompts, chat, tools, grammar, settings
                )
                text = out["choices"][0]["text"] or ""
        except ValueError as e:  # llama.cpp reports a prompt longer than n_ctx this way
            raise ModelUnavailable(f"{self.name}: {e}") from None
        return text, self._account(llama, out.get("usage") or {}, start, fixed=fixed, guard=guard)

    async def yes_probability(self, chat: list[dict[str, str]]) -> float | None:
        """How likely the model's next word after `chat` (a yes/no question, in its own
        chat template) is "yes" rather than "no": the two words' probabilities from one
        prompt evaluation, nothing generated. None when its template is not llama.cpp's
        Jinja one, the prompt does not fit the context, or the model is busy generating."""
        return await asyncio.to_thread(self._yes_probability, chat)

    def _yes_probability(self, chat: list[dict[str, str]]) -> float | None:
        import llama_cpp
        import numpy as np

        llama = self.llama()
        if (formatter := self._formatter(llama)) is None:
            return None
        result = formatter(messages=chat)
        prompt = result.prompt.encode("utf-8")
        tokens = list(llama.tokenize(prompt, add_bos=not result.added_special, special=True))
        if len(tokens) >= self._n_ctx:
            return None
        words = [llama.tokenize(w.encode(), add_bos=False)[0] for w in ("yes", "Yes", "no", "No")]
        lock = _IN_USE[id(llama)]
        if not lock.acquire(blocking=False):  # the model is generating (a streamed plan):
            return None  # no judgment rather than a stalled plan
        try:
            llama.reset()
            llama.eval(tokens)
            _CONTEXT[id(llama)] = tokens  # what the context holds now (`_account`)
            row = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1)
            logits = np.ctypeslib.as_array(row, shape=(llama.n_vocab(),))[words].astype(float)
        finally:
            lock.release()
        odds = np.exp(logits - logits.max())
        return float(odds[:2].sum() / odds.sum())

    def _prompt_states(self, llama: Any) -> tuple[PrefixStates, Any] | None:
        """The prefix states and the chat formatter of the model's own template (None:
        warm start off, or a model whose prompts llama.cpp formats another way)."""
        if self._prefix_folder is None or (formatter := self._formatter(llama)) is None:
            return None
        if self._prompts is None:
            import llama_cpp

            path = Path(llama.model_path)
            stat = path.stat()
            key = f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}:{self._n_ctx}:"
            key += llama_cpp.__version__
            if self._lora is not None:  # the adapter changes every state: part of the key
                lora = self._lora.stat()
                key += f":{self._lora.name}:{lora.st_size}:{lora.st_mtime_ns}"
            self._prompts = (PrefixStates(self._prefix_folder, key), formatter)
        return self._prompts

    def _formatter(self, llama: Any) -> Any:
        """The model's own chat template as a formatter (None: a model whose prompts
        llama.cpp formats another way)."""
        if llama.chat_format != "chat_template.default":
            return None
        if self._template is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                if token == -1:
                    return ""
                return bytes(llama.detokenize([token], special=True)).decode("utf-8", "replace")

            self._template = Jinja2ChatFormatter(
                template=llama.metadata["tokenizer.chat_template"],
                eos_token=text(llama.token_eos()),
                bos_token=text(llama.token_bos()),
                stop_token_ids=[llama.token_eos()],
            )
        return self._template

    def _complete_warm(
        self,
        llama: Any,
        prompts: tuple[PrefixStates, Any],
        chat: list[dict[str, str]],
        tools: list[dict[str, Any]] | None,
        grammar: Any,
        settings: ModelSettings,
    ) -> tuple[Any, int, Runaway]:
        """`create_chat_completion`, with the prompt's fixed prefix loaded from disk: the
        same template, tokens and sampling; the prefix is what the prompt shares with the
        same conversation up to a placeholder first request. Also the prefix's length and
        the runaway guard the completion ran with."""
        states, formatter = prompts
        result = formatter(messages=chat, tools=tools)

        def tokens(prompt: str) -> list[int]:
            encoded = prompt.encode("utf-8")
            return list(llama.tokenize(encoded, add_bos=not result.added_special, special=True))

        prompt = tokens(result.prompt)
        first = next((i for i, m in enumerate(chat) if m["role"] == "user"), len(chat))
        key = json.dumps([chat[:first], tools], sort_keys=True)
        if (probe := self._probes.get(key)) is None:  # once per system prompt and tool set
            placeholder = [*chat[:first], {"role": "user", "content": "\u2063"}]
            probe = tokens(formatter(messages=placeholder, tools=tools).prompt)
            if len(self._probes) >= _GRAMMAR_CACHE:
                self._probes.clear()
            self._probes[key] = probe
        fixed = common_prefix(prompt, probe)
        self.last_warmth = states.warm(llama, prompt[:fixed])
        if self.last_warmth in ("saved", "short"):
            fixed = 0  # read now: part of what this turn had to read
        out, guard = self._generate(
            llama, prompt, grammar, settings, stop=result.stop, also=result.stopping_criteria
        )
        return out, fixed, guard

    def _generate(
        self,
        llama: Any,
        prompt: list[int],
        grammar: Any,
        settings: ModelSettings,
        *,
        stop: Any = None,
        also: Any = None,
        until: Callable[[str], bool] | None = None,
    ) -> tuple[Any, Runaway]:
        """`create_completion` of `prompt` under the runaway guard (which also ends the
        generation when `until(text so far)` is True), with `stop` strings and `also`
        stopping criteria; the output and the guard."""
        import llama_cpp

        guard = self._guard(llama, len(prompt), until)
        _forget_stale(llama)
        criteria = llama_cpp.StoppingCriteriaList([*(also or []), guard])
        with _sampling(llama, grammar, settings) as sampling:
            out = llama.create_completion(
                prompt=prompt,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                seed=settings.seed,
                stop=stop,
                stopping_criteria=criteria,
                **sampling,
            )
        self.last_confidence = _confidence(sampling)
        return out, guard

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        settings = settings or ModelSettings()
        if settings.as_written:
            return await self._structured(messages, settings, settings.response_schema)
        chat = to_plain_chat(messages, tools)
        async with self._turn():
            grammar = await asyncio.to_thread(self.grammar_for, tools) if self._grammar else None
            self.last_confidence = None
            raw, usage = await asyncio.to_thread(
                self.complete_chat, chat, settings=settings, grammar=grammar
            )
            confidence = self.last_confidence
        response = to_response(raw, self._ids)
        response.usage = usage
        response.confidence = confidence
        return response

    async def next_call(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        calls: list[ToolCall],
        settings: ModelSettings | None = None,
        stop: Callable[[str], bool] | None = None,
    ) -> ModelResponse:
        """The call this model writes after `calls` when its reply must go on: the reply
        so far is put in its mouth and one more call decoded under the tools' grammar
        (`CallContinuation`). `raw` is the whole reply with the new call; no call (an
        empty response) for a model without its own chat template.

        Small models stop after the first of several calls a request needs; forced to
        go on, they mostly write the next one. Whether to keep it is the caller's call;
        `stop`, given the call's text so far, ends its generation early when True (the
        caller would refuse it anyway; the reply then has no call).
        """
        settings = settings or ModelSettings()
        chat = to_plain_chat(messages, tools)
        reply = render_call_reply(Message(role="assistant", tool_calls=calls))
        prefix = reply[: reply.rindex("]")].rstrip() + ", "
        async with self._turn():
            llama = await asyncio.to_thread(self.llama)
            if not tools or not calls or (formatter := self._formatter(llama)) is None:
                return ModelResponse()
            grammar = await asyncio.to_thread(self.grammar_for_schema, one_call_schema(tools))
            prompt = formatter(messages=chat).prompt + prefix
            raw, usage = await asyncio.to_thread(
                self._complete_text, llama, prompt, grammar, settings, stop
            )
        try:
            data = json.loads(raw)
        except ValueError:  # cut short by max_tokens
            return ModelResponse(raw=raw, usage=usage)
        call = ToolCall(
            id=f"call_{next(self._ids)}", name=data["name"], arguments=data["arguments"]
        )
        return ModelResponse(tool_calls=[call], raw=prefix + raw + "]}", usage=usage)

    def _complete_text(
        self,
        llama: Any,
        prompt: str,
        grammar: Any,
        settings: ModelSettings,
        stop: Callable[[str], bool] | None = None,
    ) -> tuple[str, Usage]:
        """A blocking completion of raw prompt text (special tokens read as such); `stop`
        sees the text generated so far and ends the generation when True."""
        with _IN_USE[id(llama)]:
            return self._complete_text_held(llama, prompt, grammar, settings, stop)

    def _complete_text_held(
        self,
        llama: Any,
        prompt: str,
        grammar: Any,
        settings: ModelSettings,
        stop: Callable[[str], bool] | None,
    ) -> tuple[str, Usage]:
        import llama_cpp

        llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
        start = time.perf_counter()
        tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        try:
            out, guard = self._generate(llama, list(tokens), grammar, settings, until=stop)
        except ValueError as e:
            llama.reset()
            raise ModelUnavailable(f"{self.name}: {e}") from None
        return out["choices"][0]["text"] or "", self._account(
            llama, out.get("usage") or {}, start, guard=guard
        )

    async def stream(
        self, messages: list[Message], settings: ModelSettings
    ) -> AsyncIterator[str | Usage]:
        """Structured output (`settings.response_schema` required) as it is generated: text
        pieces, then the turn's `Usage`. Closing the iterator early stops generation."""
        import llama_cpp

        if settings.response_schema is None:
            raise UserError("LocalModel.stream needs settings.response_schema.")
        chat = [{"role": m.role, "content": m.content} for m in messages]
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[str | Usage | BaseException] = asyncio.Queue()
        stop = threading.Event()

        def put(piece: str | Usage | BaseException) -> None:
            """Hand `piece` from the generating thread to the event loop."""
            loop.call_soon_threadsafe(pieces.put_nowait, piece)

        def generate() -> None:
            llama = self.llama()
            with _IN_USE[id(llama)]:
                held(llama)

        def held(llama: Any) -> None:
            llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
            start = time.perf_counter()
            _forget_stale(llama)
            try:
                n = self._stream_pieces(llama, chat, settings, put, stop)
                usage: str | Usage | BaseException = self._stream_usage(llama, n, start)
            except ValueError as e:
                usage = ModelUnavailable(f"{self.name}: {e}")
            put(usage)

        async with self._turn():
            worker = asyncio.ensure_future(asyncio.to_thread(generate))
            try:
                while True:
                    piece = await pieces.get()
                    if isinstance(piece, BaseException):
                        raise piece
                    yield piece
                    if isinstance(piece, Usage):
                        break
            finally:
                stop.set()
                await worker

    def _stream_pieces(
        self,
        llama: Any,
        chat: list[dict[str, Any]],
        settings: ModelSettings,
        put: Callable[[str], None],
        stop: threading.Event,
    ) -> int:
        """Generate `chat`'s reply under `settings.response_schema`'s grammar, handing each
        piece of text to `put`, until done or `stop` is set; the pieces generated."""
        chunks = llama.create_chat_completion(
            messages=chat,
            grammar=self.grammar_for_schema(settings.response_schema or {}),
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            seed=settings.seed,
            stream=True,
        )
        n = 0
        for chunk in chunks:
            text = chunk["choices"][0]["delta"].get("content") or ""
            if text:
                n += 1
                put(text)
            if stop.is_set():
                break
        return n

    def _stream_usage(self, llama: Any, n: int, start: float) -> Usage:
        """The usage of a streamed turn of `n` pieces begun at `start`; what it generated
        is dropped from `llama`'s cache, its prompt kept (`_keep_prompt`)."""
        import llama_cpp

        perf = llama_cpp.llama_perf_context(llama._ctx.ctx)
        _keep_prompt(llama, max(0, llama.n_tokens - n))
        return Usage(
            prompt_tokens=llama.n_tokens,
            completion_tokens=n,
            seconds=time.perf_counter() - start,
            prompt_seconds=perf.t_p_eval_ms / 1000,
            generation_seconds=perf.t_eval_ms / 1000,
        )

    async def _structured(
        self, messages: list[Message], settings: ModelSettings, schema: dict[str, Any] | None
    ) -> ModelResponse:
        """The reply to `messages` as written, under `schema`'s grammar (None: free text)."""
        chat = [{"role": m.role, "content": m.content} for m in messages]
        async with self._turn():
            grammar = None
            if schema is not None:
                grammar = await asyncio.to_thread(self.grammar_for_schema, schema)
            raw, usage = await asyncio.to_thread(
                self.complete_chat, chat, settings=settings, grammar=grammar
            )
        return ModelResponse(text=raw, raw=raw, usage=usage)


def _needs_llama_cpp() -> None:
    """Raise a one-line `UserError` naming the extra when llama-cpp-python is absent (an
    install without `[local]`), instead of a traceback at the first turn."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise UserError(
            "The local model needs llama-cpp-python, which this install lacks: install "
            "bigloop with its 'local' extra (from a clone: pip install '.[local]', or make "
            "run, which builds it for this CPU)."
        ) from None
