"""What the judge is shown about a turn: texts, tool steps, context, and placeholders.

Every runner gives the agent's answer, its tool calls and responses, and its
intermediate texts. The ADK runners also give the turn's events in order (with any
grounding metadata) and the app's details (instructions, tool declarations); the
command runner does not, and the prompts then say those were not provided, as ADK
does for an invocation without app details.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...evalset.models import (
    Content,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvents,
)
from ...traces import ActualTurn

NO_INSTRUCTIONS = "No developer instructions were provided."
NO_TOOL_DECLARATIONS = "No tool declarations were provided."
NO_TOOL_STEPS = "The agent made no tool calls."
NO_GROUNDING = "No grounding metadata was provided."


def content_text(content: Content | None) -> str:
    """ADK's text of a content: its non-empty text parts joined by newlines."""
    return content.text() if content is not None else ""


def _texts_of(item: Any) -> list[str]:
    """Text of one intermediate response, in any of the shapes runners send."""
    if isinstance(item, str):
        return [item] if item else []
    if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str):
        return _texts_of({"parts": item[1]})  # ADK's (author, parts)
    if isinstance(item, dict):
        if isinstance(item.get("content"), dict):
            return _texts_of(item["content"])
        parts = item.get("parts")
        if isinstance(parts, list):
            texts = [
                p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in parts
            ]
            joined = "\n".join(t for t in texts if isinstance(t, str) and t)
            return [joined] if joined else []
        if isinstance(item.get("text"), str) and item["text"]:
            return [item["text"]]
    return []


def intermediate_texts(turn: ActualTurn) -> list[str]:
    """The agent's natural-language texts before its final answer, in order."""
    texts = [text for item in turn.intermediate_responses for text in _texts_of(item)]
    if not texts and turn.invocation_events:
        texts = [t for e in turn.invocation_events if (t := content_text(e.content))]
    return texts


def _agents(turn: ActualTurn) -> dict[str, dict[str, Any]]:
    """The app's agents from the runner's ADK AppDetails: name -> {instructions, tool_declarations}."""
    details = turn.app_details
    if hasattr(details, "model_dump"):
        details = details.model_dump(mode="json", exclude_none=True)
    agents = details.get("agent_details") if isinstance(details, dict) else None
    if not isinstance(agents, dict):
        return {}
    return {
        name: (a.model_dump(mode="json") if hasattr(a, "model_dump") else a)
        for name, a in agents.items()
        if isinstance(a, dict) or hasattr(a, "model_dump")
    }


def developer_instructions(turn: ActualTurn, every_agent: bool = False) -> str:
    """The answering agent's instructions (the first event's author, else the first agent);
    with `every_agent`, each agent's as "name:\ninstructions"."""
    agents = _agents(turn)
    if every_agent:
        texts = [
            f"{name}:\n{a['instructions']}" for name, a in agents.items() if a.get("instructions")
        ]
        return "\n\n".join(texts) or NO_INSTRUCTIONS
    events = turn.invocation_events or []
    name = events[0].author if events else next(iter(agents), None)
    agent = agents.get(name) if name is not None else None
    return (agent or {}).get("instructions") or NO_INSTRUCTIONS


def tool_declarations(turn: ActualTurn) -> str:
    agents = _agents(turn)
    declared = {name: a.get("tool_declarations") or [] for name, a in agents.items()}
    if not any(declared.values()):
        return NO_TOOL_DECLARATIONS
    return _dump({"tool_declarations": declared})


def grounding_metadata(turn: ActualTurn) -> str:
    found = [
        {"step": index, "author": event.author, "grounding_metadata": event.grounding_metadata}
        for index, event in enumerate(turn.invocation_events or [])
        if event.grounding_metadata
    ]
    return _dump({"grounding_metadata": found}) if found else NO_GROUNDING


def expected_intermediate_texts(invocation: Invocation) -> list[str]:
    data = invocation.intermediate_data
    if isinstance(data, IntermediateData):
        return [
            text
            for _, parts in data.intermediate_responses
            if (text := Content(parts=parts).text())
        ]
    if isinstance(data, InvocationEvents):
        return [text for event in data.invocation_events if (text := content_text(event.content))]
    return []


def answer_text(turn: ActualTurn, include_intermediate: bool) -> str:
    """The answer judged; with `include_intermediate_responses_in_final` the earlier texts first."""
    texts = intermediate_texts(turn) if include_intermediate else []
    final = content_text(turn.final_response)
    return "\n".join([*texts, final] if final else texts)


def reference_text(invocation: Invocation, include_intermediate: bool) -> str:
    texts = expected_intermediate_texts(invocation) if include_intermediate else []
    final = content_text(invocation.final_response)
    return "\n".join([*texts, final] if final else texts)


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def paired_steps(
    calls: Sequence[FunctionCall], responses: Sequence[FunctionResponse]
) -> list[tuple[FunctionCall, FunctionResponse | None]]:
    """Each call with its response: by id when both carry one, else the next unused one of
    the same tool name (runners often send no ids; ADK would then pair wrongly)."""
    unused = list(responses)
    pairs = []
    for call in calls:
        match = next((r for r in unused if call.id and r.id == call.id), None)
        if match is None:
            match = next(
                (r for r in unused if r.name == call.name and not (call.id and r.id)), None
            )
        if match is not None:
            unused.remove(match)
        pairs.append((call, match))
    return pairs


def tool_steps(turn: ActualTurn) -> str:
    """The agent's tool calls with their results, as indented JSON (or a placeholder)."""
    if not turn.tool_uses:
        return NO_TOOL_STEPS
    steps = [
        {
            "step": number,
            "tool": call.name,
            "args": call.args if call.args is not None else {},
            "result": response.response if response is not None else None,
        }
        for number, (call, response) in enumerate(
            paired_steps(turn.tool_uses, turn.tool_responses), start=1
        )
    ]
    return _dump(steps)


def hallucination_context(user_message: str, turn: ActualTurn, before: int | None = None) -> str:
    """What the agent knew when it wrote a text, in the sections ADK's context has.

    With the turn's events (ADK runners): the events before the text (`before`: how many
    texts came earlier; None: all events), in order. Without them (command runner):
    tool calls, tool results and texts are not interleaved, so a text is checked against
    all of the turn's tool calls and results and the texts before it.
    """
    sections = [
        f"Developer instructions:\n{developer_instructions(turn, every_agent=True)}",
        f"User prompt:\n{user_message}",
        f"Tool definitions:\n{tool_declarations(turn)}",
        f"Grounding metadata:\n{grounding_metadata(turn)}",
    ]
    if turn.invocation_events is not None:
        texts_seen = 0
        for event in turn.invocation_events:
            text = content_text(event.content)
            if before is not None and text and texts_seen >= before:
                break
            texts_seen += bool(text)
            sections.extend(_event_sections(event.content))
        return "\n\n".join(sections)
    earlier = intermediate_texts(turn)
    sections.extend(earlier if before is None else earlier[:before])
    if turn.tool_uses:
        calls = [
            {"name": c.name, "args": c.args if c.args is not None else {}} for c in turn.tool_uses
        ]
        sections.append(f"tool_calls:\n{_dump(calls)}")
    if turn.tool_responses:
        outputs = [{"name": r.name, "response": r.response} for r in turn.tool_responses]
        sections.append(f"tool_outputs:\n{_dump(outputs)}")
    return "\n\n".join(sections)


def _event_sections(content: Content | None) -> list[str]:
    parts = content.parts or [] if content is not None else []
    sections = []
    if text := content_text(content):
        sections.append(text)
    calls = [p.function_call for p in parts if p.function_call]
    if calls:
        dumped: list[dict[str, Any]] = [
            {"name": c.name, "args": c.args if c.args is not None else {}} for c in calls
        ]
        sections.append(f"tool_calls:\n{_dump(dumped)}")
    responses = [p.function_response for p in parts if p.function_response]
    if responses:
        dumped = [{"name": r.name, "response": r.response} for r in responses]
        sections.append(f"tool_outputs:\n{_dump(dumped)}")
    return sections
