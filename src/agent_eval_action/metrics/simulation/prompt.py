"""What the user simulator is asked: our own prompt (prompts/user_simulator.txt, versioned
like the judge's), or the config's `custom_instructions` (a Jinja template, as in ADK,
rendered in a sandbox); the persona's behaviours; the conversation so far, summarised as
ADK summarises it (user and agent texts, thoughts left out, tool calls only when asked)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...evalset.models import ConversationScenario, Part, UserPersona
from ...traces import ActualTurn
from ..judge.prompts import template
from .config import STOP_SIGNAL, SimulatorConfig, sandbox

TEMPLATE = "user_simulator"


def _fill(text: str) -> str:
    """A persona string with ADK's {{ stop_signal }} placeholder filled in."""
    return sandbox().from_string(text).render(stop_signal=STOP_SIGNAL) if "{" in text else text


def persona_text(persona: UserPersona | None) -> str:
    """The persona block of our prompt: its description and each behaviour's instructions."""
    if persona is None:
        return ""
    lines = ["", "Who you are:", _fill(persona.description)]
    for behavior in persona.behaviors:
        lines.append(f"- {_fill(behavior.description)}")
        lines.extend(f"  * {_fill(item)}" for item in behavior.behavior_instructions)
    return "\n".join(lines) + "\n"


def _args(value: Any) -> str:
    return str(value if value is not None else {})


def conversation_history(turns: Sequence[ActualTurn], include_function_calls: bool) -> str:
    """The conversation so far, one line per text (ADK's `author: text`), blank-line joined."""
    lines: list[str] = []
    for turn in turns:
        user = turn.user_content.parts if turn.user_content is not None else None
        lines.extend(f"user: {p.text}" for p in user or () if _said(p))
        author = "agent"
        if turn.invocation_events:
            for event in turn.invocation_events:
                author = event.author
                for part in (event.content.parts or ()) if event.content else ():
                    lines.extend(_part_lines(event.author, part, include_function_calls))
        elif include_function_calls:
            for call in turn.tool_uses:
                lines.append(f"agent called tool '{call.name}' with args: {_args(call.args)}")
            for response in turn.tool_responses:
                lines.append(f"Tool '{response.name}' returned: {_args(response.response)}")
        final = turn.final_response.parts if turn.final_response is not None else None
        lines.extend(f"{author}: {p.text}" for p in final or () if _said(p))
    return "\n\n".join(lines)


def _said(part: Part) -> bool:
    return bool(part.text) and not part.thought


def _part_lines(author: str, part: Part, include_function_calls: bool) -> list[str]:
    if _said(part):
        return [f"{author}: {part.text}"]
    if include_function_calls and part.function_call is not None:
        call = part.function_call
        return [f"{author} called tool '{call.name}' with args: {_args(call.args)}"]
    if include_function_calls and part.function_response is not None:
        response = part.function_response
        return [f"Tool '{response.name}' returned: {_args(response.response)}"]
    return []


def render(
    config: SimulatorConfig, scenario: ConversationScenario, turns: Sequence[ActualTurn]
) -> str:
    """The prompt for the user turn after `turns`."""
    persona = scenario.user_persona if isinstance(scenario.user_persona, UserPersona) else None
    history = conversation_history(turns, config.include_function_calls)
    if config.custom_instructions is not None:
        values: dict[str, Any] = {
            "stop_signal": STOP_SIGNAL,
            "conversation_plan": scenario.conversation_plan,
            "conversation_history": history,
        }
        if persona is not None:
            values["persona"] = persona.model_dump()
        return str(sandbox().from_string(config.custom_instructions).render(values))
    return template(TEMPLATE).render(
        stop_signal=STOP_SIGNAL,
        persona=persona_text(persona),
        conversation_plan=scenario.conversation_plan,
        conversation_history=history,
    )


def prompt_version(config: SimulatorConfig) -> str:
    """What wrote the user turns: our template's label, or the config's own instructions."""
    return "custom_instructions" if config.custom_instructions else template(TEMPLATE).label
