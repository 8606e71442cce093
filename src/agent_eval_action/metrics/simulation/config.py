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
    """What a value weighs: a string's or a list's length, an int's digits (about)."""
    if isinstance(value, int):
        return value.bit_length() // 3 + 1
    return len(value) if isinstance(value, str | bytes | list | tuple) else 0


_FORMAT_SPEC = re.compile(r"%[#0 +-]*(\*|\d*)(?:\.(\*|\d*))?")


def _padding(template: str) -> int:
    """The most `template % ...` can pad: its widths and precisions ("*": unbounded)."""
    numbers = [n for spec in _FORMAT_SPEC.findall(template) for n in spec if n]
    return MAX_PROMPT_CHARS + 1 if "*" in numbers else sum(map(int, numbers))


def result_size(operator: str, left: Any, right: Any) -> int:
    """About how large `left <operator> right` would be, found before it is computed."""
    if operator == "*":
        seq, count = (left, right) if isinstance(right, int) else (right, left)
        if isinstance(count, int) and not isinstance(seq, int):
            return _size(seq) * max(count, 0)
    if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        return _size(left) * right
    if operator == "%" and isinstance(left, str):
        return len(left) + _padding(left) + _size(right)
    return _size(left) + _size(right)


@functools.cache
def sandbox() -> Any:
    """ADK's sandbox (jinja2's SandboxedEnvironment, undefined names an error), whose
    `+`, `*`, `**` and `%` refuse a result over MAX_PROMPT_CHARS before computing it."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class CappedSandbox(SandboxedEnvironment):
        intercepted_binops = frozenset({"+", "*", "**", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            size = result_size(operator, left, right)
            if size > MAX_PROMPT_CHARS:
                raise OverCap(
                    f"a template's `{operator}` would make about {size:,} characters, over "
                    f"the cap of {MAX_PROMPT_CHARS:,}"
                )
            return super().call_binop(context, operator, left, right)

    return CappedSandbox(undefined=StrictUndefined, autoescape=False)


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
