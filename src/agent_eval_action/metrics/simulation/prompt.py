"""What the user simulator is asked: our own prompt (prompts/user_simulator.txt, versioned
like the judge's), or the config's `custom_instructions` (a Jinja template, as in ADK,
rendered in a sandbox); the persona's behaviours; the conversation so far, summarised as
ADK summarises it (user and agent texts, thoughts left out, tool calls only when asked).
Every prompt is at most MAX_PROMPT_CHARS (config.capped), counted while it is made."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

from ...evalset.models import ConversationScenario, Part, UserPersona
from ...traces import ActualTurn, UserTurnError
from ..judge.prompts import template
from .config import STOP_SIGNAL, OverCap, SimulatorConfig, capped, sandbox

TEMPLATE = "user_simulator"


def _fill(text: str) -> Iterable[str]:
    """A persona string with ADK's {{ stop_signal }} placeholder filled in, as it renders."""
    return sandbox().from_string(text).generate(stop_signal=STOP_SIGNAL) if "{" in text else (text,)


def _persona_chunks(persona: UserPersona) -> Iterator[str]:
    yield "\nWho you are:\n"
    yield from _fill(persona.description)
    for behavior in persona.behaviors:
        yield "\n- "
        yield from _fill(behavior.description)
        for item in behavior.behavior_instructions:
            yield "\n  * "
            yield from _fill(item)
    yield "\n"


def persona_text(persona: UserPersona | None) -> str:
    """The persona block of our prompt: its description and each behaviour's instructions."""
    return "" if persona is None else capped(_persona_chunks(persona), "the persona")


def check_persona(persona: UserPersona | None) -> None:
    """Every string of the persona renders, within the cap (they depend on nothing a run
    brings, so this is checked when the case is read). ValueError saying why not."""
    from jinja2 import TemplateError

    if persona is None:
        return
    rubrics = [rubric for b in persona.behaviors for rubric in b.violation_rubrics]
    try:
        persona_text(persona)
        capped(chain.from_iterable(map(_fill, rubrics)), "the persona's violation rubrics")
    except (OverCap, TemplateError) as err:
        raise ValueError(f"user_persona: {err}") from None
    except RecursionError:  # a macro that calls itself
        raise ValueError("user_persona: a template that recurses without end") from None
    except (SyntaxError, MemoryError, OverflowError):  # nested past what Python compiles
        raise ValueError("user_persona: a template too deep or too large to render") from None


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
    """The prompt for the user turn after `turns`: OverCap as soon as it passes the cap (or
    a template recurses without end), UserTurnError when a template of the eval files fails to render."""
    from jinja2 import TemplateError

    try:
        return capped(_prompt(config, scenario, turns), "the prompt")
    except TemplateError as err:
        raise UserTurnError(f"the prompt cannot be rendered: {err}") from None
    except RecursionError:  # a macro of custom_instructions that calls itself: a cap too
        raise OverCap("the prompt cannot be rendered: it recurses without end") from None
    except (MemoryError, OverflowError):  # what a template grew past the memory there is
        raise OverCap("the prompt cannot be rendered: it grew past the memory") from None


def _prompt(
    config: SimulatorConfig, scenario: ConversationScenario, turns: Sequence[ActualTurn]
) -> Iterable[str]:
    """The prompt's text, in pieces: the custom instructions' as they render."""
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
        return sandbox().from_string(config.custom_instructions).generate(values)
    prompt = template(TEMPLATE).render(
        stop_signal=STOP_SIGNAL,
        persona=persona_text(persona),
        conversation_plan=scenario.conversation_plan,
        conversation_history=history,
    )
    return (prompt,)


def prompt_version(config: SimulatorConfig) -> str:
    """What wrote the user turns: our template's label, or the config's own instructions."""
    return "custom_instructions" if config.custom_instructions else template(TEMPLATE).label
