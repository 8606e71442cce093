"""test_config.json's `user_simulator_config`, read as ADK 2.13 reads its
LlmBackedUserSimulatorConfig: the model, its generation config, the turn limit, custom
instructions and whether the simulator sees tool calls. ADK's stop signal is fixed.

The eval files are the PR's and the key that pays for the simulator is not, so what a
config may ask for is capped (docs/security.md, "Caps"): the simulator's own caps here,
the generation options and token caps it shares with the judge in metrics/judge/caps.py.
A value past a cap is bad input when the config is read; a prompt past one is refused
(`OverCap`) before Gemini is asked."""

from __future__ import annotations

import contextlib
import functools
import re
import sys
import time
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from ...traces import UserTurnError
from ..judge.caps import (
    MAX_THINKING_BUDGET,
    check_generation,
    with_token_caps,
)

STOP_SIGNAL = "</finished>"  # ADK's LlmBackedUserSimulator's, not configurable there either

# --- the caps -----------------------------------------------------------------------------
DEFAULT_MODEL = "gemini-2.5-flash"  # ADK's
# the models a config may name: the flash models of the built-in price table
SIMULATOR_MODELS = (
    DEFAULT_MODEL,
    "gemini-2.5-flash-lite",
    "gemini-3-flash-preview",
    "gemini-3.1-flash-lite",
    "gemini-3.5-flash",
)
MAX_USER_TURNS = 50  # a conversation's user turns (max_allowed_invocations; -1 is this)
MAX_PROMPT_CHARS = 200_000  # a prompt, the conversation so far included (~50k tokens)
# seconds a prompt (or a persona) may take to render: loops that write nothing, nested over
# values within the caps above, would otherwise hold serve-users until its stage is killed
MAX_RENDER_SECONDS = 2.0
# the generation options and token caps are the judge's too: one key, one set of caps


class OverCap(UserTurnError):
    """A prompt (or a value a template makes) over MAX_PROMPT_CHARS, or a template that
    recurses without end: refused, nothing asked."""


def capped(chunks: Iterable[str], what: str) -> str:
    """The text of `chunks`, counted as they come: OverCap once it passes MAX_PROMPT_CHARS
    (a template's output is refused while it renders, never built whole first), or once
    rendering it has taken MAX_RENDER_SECONDS."""
    kept: list[str] = []
    size = 0
    with _deadline(what):
        for chunk in chunks:
            size += len(chunk)
            if size > MAX_PROMPT_CHARS:
                raise OverCap(f"{what} is over the cap of {MAX_PROMPT_CHARS:,} characters")
            kept.append(chunk)
    return "".join(kept)


TEMPLATE_CODE = "<template>"  # the file name of the code jinja2 compiles a template into


@contextlib.contextmanager
def _deadline(what: str) -> Iterator[None]:
    """OverCap raised in a template's own code, at its next line, once MAX_RENDER_SECONDS
    have passed: a loop that writes nothing runs template lines, and nothing else would
    stop it (a trace function, on this thread alone, for the templates' frames alone)."""
    end = time.monotonic() + MAX_RENDER_SECONDS

    def line(frame: FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > end:
            raise OverCap(f"{what} took over {MAX_RENDER_SECONDS:g} s to render")
        return line

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        return line if frame.f_code.co_filename == TEMPLATE_CODE else None

    before = sys.gettrace()
    sys.settrace(call)
    try:
        yield
    finally:
        sys.settrace(before)


def _size(value: Any) -> int:
    """What a value weighs as text, about: a string's length, an int's digits, a container's
    items' and keys' (a list of a thousand references to one long string weighs a thousand
    of it); counted only until it passes MAX_PROMPT_CHARS."""
    total = 0
    stack = [value]
    while stack and total <= MAX_PROMPT_CHARS:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, dict):
            total += 2 + len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 8
    return total


_FORMAT_SPEC = re.compile(r"%[#0 +-]*(\*|\d*)(?:\.(\*|\d*))?")


def _padding(template: str) -> int:
    """The most `template % ...` can pad: its widths and precisions ("*": unbounded)."""
    numbers = [n for spec in _FORMAT_SPEC.findall(template) for n in spec if n]
    return MAX_PROMPT_CHARS + 1 if "*" in numbers else sum(map(int, numbers))


def result_size(operator: str, left: Any, right: Any) -> int:
    """About how large `left <operator> right` would be, found before it is computed."""
    if operator == "*":
        seq, count = (left, right) if isinstance(right, int) else (right, left)
        if isinstance(count, int) and not isinstance(seq, int | float):
            return _size(seq) * max(count, 0)
    if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        return _size(left) * right
    if operator == "%" and isinstance(left, str):
        return len(left) + _padding(left) + _size(right)
    return _size(left) + _size(right)


def _over(what: str, size: int) -> OverCap:
    return OverCap(
        f"a template's {what} would make about {size:,} characters, over the cap of "
        f"{MAX_PROMPT_CHARS:,}"
    )


def _guarded(name: str, function: Any) -> Any:
    """A filter that refuses, before it runs, inputs that weigh over MAX_PROMPT_CHARS,
    numbers past it (a width, a count: `center(10**9)`), and a result `_grown` would make
    past it."""
    from jinja2 import Environment
    from jinja2.nodes import EvalContext
    from jinja2.runtime import Context

    @functools.wraps(function)
    def filtered(*args: Any, **kwargs: Any) -> Any:
        given = [a for a in args if not isinstance(a, Environment | Context | EvalContext)]
        _check_arguments(name, given, kwargs)
        return function(*args, **kwargs)

    return filtered


# what a call of these may make of its arguments, about, beyond their own weight: `value`
# the string (or the separator, for join), then the other arguments as given
_SPEC_WIDTH = re.compile(r"\{[^{}]*?:[^{}]*?(\d+)[^{}]*\}")


def _grown(name: str, args: list[Any], kwargs: dict[str, Any]) -> int:
    value = args[0] if args else None
    rest = [*args[1:], *kwargs.values()]
    if not isinstance(value, str):
        return 0
    if name == "replace" and len(rest) >= 2:
        old, new = str(rest[0]), str(rest[1])
        times = len(value) + 1 if old == "" else value.count(old)
        return times * max(len(new) - len(old), 0)
    if name == "join" and rest and isinstance(rest[0], list | tuple | set | dict):
        return len(value) * len(rest[0])  # str.join: the separator between every item
    if name in ("indent", "wordwrap", "expandtabs"):
        lines = value.count("\n") + value.count("\t") + 1
        return lines * sum(
            _size(v) if isinstance(v, str) else v for v in rest if isinstance(v, str | int)
        )
    if name == "format":
        return _padding(value) + sum(int(w) for w in _SPEC_WIDTH.findall(value))
    return 0


def _check_arguments(name: str, args: Any, kwargs: Any) -> None:
    what = f"`{name}`"
    values = [*args, *kwargs.values()]
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_PROMPT_CHARS:
            raise _over(what, value)
    size = sum(_size(value) for value in values)
    if name == "join" and args and isinstance(args[0], list | tuple) and len(args) > 1:
        size += len(str(args[1])) * len(args[0])  # the join filter: (items, separator)
    else:
        size += _grown(name, list(args), dict(kwargs))
    if size > MAX_PROMPT_CHARS:
        raise _over(what, size)


def _capped_join(pieces: Iterable[str]) -> str:
    """What a `{% set %}` block, a macro or a call block makes, joined only while it stays
    within MAX_PROMPT_CHARS (each piece passed `finalize`, the whole must too)."""
    kept: list[str] = []
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > MAX_PROMPT_CHARS:
            raise _over("block", size)
        kept.append(piece)
    return "".join(kept)


@functools.cache
def sandbox() -> Any:
    """ADK's sandbox (jinja2's SandboxedEnvironment, undefined names an error), capped where
    a template could make a large value, each refused (OverCap) before it is made: `+`, `*`,
    `**` and `%` by the size of their result; every filter and method call by the weight of
    what it is given and the numbers it is given (a width, a count); every `{{ value }}` by
    the weight of the value; no constant is folded when a template is compiled (a filter of
    constants would run there, outside every check); no `lipsum`."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class CappedSandbox(SandboxedEnvironment):
        intercepted_binops = frozenset({"+", "*", "**", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            size = result_size(operator, left, right)
            if size > MAX_PROMPT_CHARS:
                raise _over(f"`{operator}`", size)
            return super().call_binop(context, operator, left, right)

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            if wrapped is not None:  # str.format, format_map: the widths its string asks for
                _check_arguments("format", (value.__self__,), {})
            return wrapped

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            name = getattr(__obj, "__name__", "a call")
            _check_arguments(name, (getattr(__obj, "__self__", None), *args), kwargs)
            return super().call(__context, __obj, *args, **kwargs)

    def finalize(value: Any) -> Any:
        size = _size(value)
        if size > MAX_PROMPT_CHARS:
            raise _over("`{{ }}`", size)
        return value

    env = CappedSandbox(
        undefined=StrictUndefined, autoescape=False, optimized=False, finalize=finalize
    )
    env.concat = _capped_join  # type: ignore[method-assign]  # set blocks, macros, calls
    env.globals.pop("lipsum", None)
    env.filters = {name: _guarded(name, f) for name, f in env.filters.items()}
    return env


_REQUIRED = ("stop_signal", "conversation_plan", "conversation_history")


def check_custom_instructions(text: str, *, persona: bool) -> None:
    """ADK's rule: custom instructions name every placeholder (and {{ persona }} when the
    scenario has a persona); and they fit in a prompt. Raises ValueError saying why not."""
    from jinja2 import TemplateSyntaxError, meta

    if len(text) > MAX_PROMPT_CHARS:
        raise ValueError(
            f"custom_instructions is {len(text):,} characters, over the cap of "
            f"{MAX_PROMPT_CHARS:,} for a prompt"
        )
    try:
        names = meta.find_undeclared_variables(sandbox().parse(text))
    except TemplateSyntaxError as err:
        raise ValueError(f"custom_instructions is not a valid Jinja template: {err}") from None
    wanted = (*_REQUIRED, "persona") if persona else _REQUIRED
    missing = [name for name in wanted if name not in names]
    if missing:
        raise ValueError(
            "custom_instructions must contain "
            + ", ".join("{{ " + name + " }}" for name in missing)
        )


def _default_generation() -> dict[str, Any]:
    # ADK's default model_configuration: thoughts on, with a budget
    return {"thinking_config": {"include_thoughts": True, "thinking_budget": MAX_THINKING_BUDGET}}


class SimulatorConfig(BaseModel):
    """How the user simulator is asked (ADK's defaults unless the config says otherwise)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    type: Literal["llm_backed"] = "llm_backed"
    model: str = DEFAULT_MODEL
    model_configuration: dict[str, Any] = Field(default_factory=_default_generation)
    # the starting prompt counts; -1: as many as MAX_USER_TURNS (ADK: no limit)
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    include_function_calls: bool = False

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if value.removeprefix("models/") not in SIMULATOR_MODELS:
            raise ValueError(
                f'"{value}" is not a model the user simulator may use: one of '
                + ", ".join(SIMULATOR_MODELS)
            )
        return value

    @field_validator("max_allowed_invocations")
    @classmethod
    def _limit(cls, value: int) -> int:
        if not -1 <= value <= MAX_USER_TURNS:
            raise ValueError(
                f"must be -1 (the cap, {MAX_USER_TURNS}) or 0 to {MAX_USER_TURNS} user turns"
            )
        return value

    @field_validator("custom_instructions")
    @classmethod
    def _placeholders(cls, value: str | None) -> str | None:
        if value is not None:
            check_custom_instructions(value, persona=False)
        return value

    @field_validator("model_configuration")
    @classmethod
    def _generation(cls, value: dict[str, Any]) -> dict[str, Any]:
        from ..judge.settings import generation_config

        # ValueError: google-genai's, or a cap
        check_generation(generation_config(value), "the user simulator")
        return value

    @property
    def turn_limit(self) -> int:
        """The most user turns a conversation has, the starting prompt counted."""
        limit = self.max_allowed_invocations
        return MAX_USER_TURNS if limit == -1 else limit

    def generation(self) -> dict[str, Any]:
        """The generation config as sent (canonical JSON, transport options left out), the
        token caps filled in where the config leaves them open."""
        from ..judge.settings import generation_config

        return with_token_caps(generation_config(self.model_configuration), thinking=True)
