"""test_config.json's `user_simulator_config`, read as ADK 2.13 reads its
LlmBackedUserSimulatorConfig: the model, its generation config, the turn limit, custom
instructions and whether the simulator sees tool calls. ADK's stop signal is fixed."""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

STOP_SIGNAL = "</finished>"  # ADK's LlmBackedUserSimulator's, not configurable there either
DEFAULT_MODEL = "gemini-2.5-flash"


_REQUIRED = ("stop_signal", "conversation_plan", "conversation_history")


@functools.cache
def sandbox() -> Any:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


def check_custom_instructions(text: str, *, persona: bool) -> None:
    """ADK's rule: custom instructions name every placeholder (and {{ persona }} when the
    scenario has a persona). Raises ValueError saying which are missing."""
    from jinja2 import TemplateSyntaxError, meta

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
    return {"thinking_config": {"include_thoughts": True, "thinking_budget": 10240}}


class SimulatorConfig(BaseModel):
    """How the user simulator is asked (ADK's defaults unless the config says otherwise)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    type: Literal["llm_backed"] = "llm_backed"
    model: str = DEFAULT_MODEL
    model_configuration: dict[str, Any] = Field(default_factory=_default_generation)
    # the starting prompt counts; -1: no limit (ADK's "not recommended")
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    include_function_calls: bool = False

    @field_validator("max_allowed_invocations")
    @classmethod
    def _limit(cls, value: int) -> int:
        if value < -1:
            raise ValueError("must be -1 (no limit) or at least 0")
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

        generation_config(value)  # raises ValueError for what google-genai refuses
        return value

    def generation(self) -> dict[str, Any]:
        """The generation config as sent (canonical JSON, transport options left out)."""
        from ..judge.settings import generation_config

        return generation_config(self.model_configuration)
