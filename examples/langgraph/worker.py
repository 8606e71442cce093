"""The command-runner adapter for the LangGraph library assistant.

    agent-eval-action run examples/langgraph/evals --command "python examples/langgraph/worker.py"

It speaks agent-eval-action's JSON-lines protocol (docs/runner-protocol.md): one request per
line on stdin, one answer per line on stdout, logs on stderr. For each user turn it runs the
graph once in the LangGraph thread named by the request's `session_id` (the checkpointer
keeps the conversation between turns) and answers with what the graph added in that turn:
the tool calls of the model's messages, the tools' results, the model's last message as the
final response, and the tokens it counted. The "end" message deletes the thread.

Only `build()` knows this agent; the rest works for any graph whose state has `messages`.

The system prompt is system_prompt.txt beside this file, or the file named by the
environment variable LIBRARY_PROMPT (shortcut_prompt.txt shows a regression); its
{placeholders} are filled from the case's session state, e.g. {member_id}.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from agent import build_graph
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from scripted_model import ScriptedLibrarian

HERE = Path(__file__).resolve().parent
# Bounds one turn's model <-> tools loop (LangGraph's recursion_limit counts steps).
STEP_LIMIT = 12


def build() -> Any:
    """The compiled graph. With a real model: build_graph(ChatOpenAI(...), InMemorySaver())."""
    return build_graph(ScriptedLibrarian(), InMemorySaver())


def run_turn(graph: Any, prompt: str, request: dict[str, Any]) -> dict[str, Any]:
    """One user turn through the graph, in the thread of the request's session."""
    config = {"configurable": {"thread_id": request["session_id"]}, "recursion_limit": STEP_LIMIT}
    history = graph.get_state(config).values.get("messages", [])
    sent: list[BaseMessage] = []
    if not history:  # the conversation's first turn: the system prompt, from the session state
        state = (request.get("session_input") or {}).get("state") or {}
        sent.append(SystemMessage(prompt.format_map(state)))
    text = "".join(part.get("text") or "" for part in request["user_content"]["parts"])
    sent.append(HumanMessage(text))
    messages = graph.invoke({"messages": sent}, config)["messages"]
    return {"id": request["id"], **answer(messages[len(history) + len(sent) :])}


def answer(produced: list[BaseMessage]) -> dict[str, Any]:
    """The protocol's answer fields from the messages the graph added in one turn."""
    tool_uses, tool_responses = [], []
    usage = {"prompt_tokens": 0, "output_tokens": 0}
    for message in produced:
        if isinstance(message, AIMessage):
            tool_uses += [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]
            if message.usage_metadata:
                usage["prompt_tokens"] += message.usage_metadata["input_tokens"]
                usage["output_tokens"] += message.usage_metadata["output_tokens"]
        elif isinstance(message, ToolMessage):
            tool_responses.append({"name": message.name, "response": _as_object(message.content)})
    last = produced[-1] if produced else None
    final = None
    if isinstance(last, AIMessage) and not last.tool_calls:
        final = {"role": "model", "parts": [{"text": last.text}]}
    return {
        "final_response": final,
        "tool_uses": tool_uses,
        "tool_responses": tool_responses,
        "usage": usage,
    }


def _as_object(content: Any) -> dict[str, Any]:
    """A tool's result as the JSON object the protocol wants (ToolNode sends JSON text)."""
    try:
        value = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        value = content
    return value if isinstance(value, dict) else {"result": value}


def main() -> None:
    prompt = Path(os.environ.get("LIBRARY_PROMPT") or HERE / "system_prompt.txt").read_text(
        encoding="utf-8"
    )
    answers = sys.stdout
    sys.stdout = sys.stderr  # a stray print() goes to the log, never into the protocol
    graph = build()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("type") == "end":
            graph.checkpointer.delete_thread(request["session_id"])
            continue
        try:
            reply = run_turn(graph, prompt, request)
        except Exception as exc:  # this turn fails; the worker keeps serving
            traceback.print_exc()
            reply = {"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}"}
        called = [use["name"] for use in reply.get("tool_uses", [])]
        print(f"{request['session_id']} turn {request['turn']}: {called}", file=sys.stderr)
        answers.write(json.dumps(reply) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
