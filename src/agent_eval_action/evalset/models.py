"""Pydantic models of ADK's eval-set files (google-adk 2.13 `EvalSet` schema).

Field names and defaults follow ADK so a file that `adk eval` accepts loads here
too; attribute names match ADK's, so custom metric functions written against
ADK's `Invocation` can read ours. Every model takes snake_case and camelCase keys.
Unset google-genai `Part` fields written out as `null` are accepted.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

# camelCase is accepted on input only; output is always snake_case, as ADK writes it.
_CAMEL_IN = AliasGenerator(validation_alias=to_camel)


class _Model(BaseModel):
    """Snake or camel keys in, snake keys out; unknown keys rejected (ADK's default)."""

    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="forbid")


class _Sparse(_Model):
    """Serialised without its unset (None) fields, as ADK writes them."""

    # No return annotation: pydantic would take it for the serialised JSON schema.
    @model_serializer(mode="wrap")
    def _drop_none(self, handler: SerializerFunctionWrapHandler):
        return {k: v for k, v in handler(self).items() if v is not None}


class FunctionCall(_Sparse):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None
    partial_args: Any = None
    will_continue: bool | None = None


class FunctionResponse(_Sparse):
    name: str | None = None
    response: dict[str, Any] | None = None
    id: str | None = None
    will_continue: bool | None = None
    scheduling: Any = None
    parts: Any = None


class Part(_Sparse):
    text: str | None = None
    thought: bool | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    # The rest of google-genai's Part fields: accepted (ADK's files write them as
    # null) but not interpreted by any deterministic metric.
    media_resolution: Any = None
    code_execution_result: Any = None
    executable_code: Any = None
    file_data: Any = None
    inline_data: Any = None
    thought_signature: Any = None
    video_metadata: Any = None
    tool_call: Any = None
    tool_response: Any = None
    part_metadata: Any = None
    audio_transcription: Any = None
    media_processing: Any = None
    speech_metadata: Any = None


class Content(_Model):
    parts: list[Part] | None = None
    role: str | None = None

    @classmethod
    def from_text(cls, text: str, role: str) -> Content:
        return cls(role=role, parts=[Part(text=text)])

    def text(self) -> str:
        """ADK's response text: the non-empty text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts or () if p.text)


class IntermediateData(_Model):
    """The hand-written form of what happened between a user turn and the answer."""

    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[Part]]] = Field(default_factory=list)


class InvocationEvent(_Model):
    """One event of the form ADK records for actual invocations."""

    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="ignore")

    author: str
    content: Content | None = None
    grounding_metadata: Any = None
    usage_metadata: Any = None
    model_version: str | None = None


class InvocationEvents(_Model):
    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class RubricContent(_Model):
    text_property: str | None = None


class Rubric(_Model):
    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class Invocation(_Model):
    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    app_details: Any = None
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None

    def tool_calls(self) -> list[FunctionCall]:
        """Tool calls in order, from either intermediate-data form (ADK's get_all_tool_calls)."""
        data = self.intermediate_data
        if isinstance(data, IntermediateData):
            return list(data.tool_uses)
        if isinstance(data, InvocationEvents):
            return [
                part.function_call
                for event in data.invocation_events
                if event.content
                for part in event.content.parts or ()
                if part.function_call
            ]
        return []


class SessionInput(_Model):
    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="allow")

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class UserBehavior(_Model):
    """One behaviour of a simulated user's persona (ADK's UserBehavior)."""

    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="ignore")

    name: str
    description: str
    behavior_instructions: list[str] = Field(default_factory=list)
    violation_rubrics: list[str] = Field(default_factory=list)


class UserPersona(_Model):
    """How the simulated user behaves (ADK's UserPersona)."""

    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="ignore")

    id: str
    description: str
    behaviors: list[UserBehavior] = Field(default_factory=list)


class ConversationScenario(_Model):
    """A plan for the user simulator instead of fixed turns. `user_persona` is a persona
    object or the id of one of ADK's pre-built personas (resolved when the case is planned)."""

    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="allow")

    starting_prompt: str
    conversation_plan: str
    user_persona: UserPersona | str | None = None


class EvalCase(_Model):
    # ADK allows unknown keys on a case; the loader warns about them instead.
    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source_of_turns(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError(
                'a case needs exactly one of "conversation" or "conversation_scenario"'
            )
        return self


class EvalSet(_Model):
    # ADK ignores unknown keys at this level; the loader warns about them instead.
    model_config = ConfigDict(alias_generator=_CAMEL_IN, populate_by_name=True, extra="allow")

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0
