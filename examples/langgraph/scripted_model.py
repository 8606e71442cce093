"""ScriptedLibrarian: a LangChain chat model that answers by rule, offline, in place of an LLM.

It is a real `BaseChatModel`: LangGraph calls it with the conversation so far (the system
prompt, the user's and the model's messages, the tool results) and the tools bound to it,
and it answers with an `AIMessage` that either calls tools or answers the user. It reads
only that request and keeps no state, so it is deterministic and safe to share between
conversations. Swap it for a real model (`ChatOpenAI`, `ChatGoogleGenerativeAI`, ...) in
worker.py; nothing else changes.

Like an LLM it follows its instructions: when the system prompt says to reserve books
"without searching the catalog", it reserves the titles it remembers the ISBN of straight
away. shortcut_prompt.txt says so; the evals catch it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

# What the "model" knows from its training: the ISBNs of a few famous books.
REMEMBERED_ISBNS = {"dune": "9780441172719", "piranesi": "9781635575637"}
SHORTCUT = "without searching the catalog"
QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
RESERVE = re.compile(r"\b(reserve|hold|book it|yes)\b", re.IGNORECASE)
MEMBER = re.compile(r"\bmember (\S+?)\.?$", re.MULTILINE)


class ScriptedLibrarian(BaseChatModel):
    """A chat model with tool calling whose answers are a few rules over the conversation."""

    @property
    def _llm_type(self) -> str:
        return "scripted-librarian"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):  # type: ignore[override]
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        offered = {tool["function"]["name"] for tool in kwargs.get("tools", [])}
        message = _next_message(messages, offered)
        words_in = sum(len(str(m.content).split()) for m in messages)
        words_out = len(str(message.content).split()) + 8 * len(message.tool_calls)
        message.usage_metadata = {
            "input_tokens": 40 + words_in,
            "output_tokens": words_out,
            "total_tokens": 40 + words_in + words_out,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])


def _next_message(messages: list[BaseMessage], offered: set[str]) -> AIMessage:
    """The model's next message: a tool call, or the answer that ends the turn."""
    system = next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")
    member = MEMBER.search(system)
    member_id = member.group(1) if member else "unknown"
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    asked = str(messages[last_user].content)
    quoted = QUOTED.search(asked)
    title = (quoted.group(1) or quoted.group(2)) if quoted else None
    wants_reserve = RESERVE.search(asked) is not None
    # Tool results of this turn, the latest of each tool.
    results = {
        m.name: json.loads(str(m.content))
        for m in messages[last_user + 1 :]
        if isinstance(m, ToolMessage)
    }

    if "reserve_book" in results:
        done = results["reserve_book"]
        if "error" in done:
            return _say(f"Sorry, I couldn't reserve it: {done['error']}.")
        return _say(
            f"Done: {done['title']} is reserved for member {done['member_id']} "
            f"(reservation {done['reservation_id']}). Pick it up at the front desk by {done['pickup_by']}."
        )
    if "search_catalog" in results:
        book = results["search_catalog"]
        if "error" in book:
            return _say(f'Sorry, we don\'t have "{title}" in our catalog.')
        if not book["available"]:
            return _say(
                f"{book['title']} by {book['author']} is on loan until {book['due']}. "
                "Shall I look for another book for you?"
            )
        if wants_reserve and "reserve_book" in offered:
            return _call(messages, "reserve_book", isbn=book["isbn"], member_id=member_id)
        return _say(
            f"Yes: {book['title']} by {book['author']} is on the shelf "
            f"({book['copies']} copies). Would you like me to reserve it?"
        )

    if title and "search_catalog" in offered:
        remembered = REMEMBERED_ISBNS.get(title.casefold())
        if wants_reserve and remembered and SHORTCUT in system and "reserve_book" in offered:
            return _call(messages, "reserve_book", isbn=remembered, member_id=member_id)
        return _call(messages, "search_catalog", title=title)
    if wants_reserve and "reserve_book" in offered:
        # "Yes, reserve it": the book is the one found earlier in this conversation.
        found = [
            json.loads(str(m.content))
            for m in messages[:last_user]
            if isinstance(m, ToolMessage) and m.name == "search_catalog"
        ]
        if found and found[-1].get("available"):
            return _call(messages, "reserve_book", isbn=found[-1]["isbn"], member_id=member_id)
    return _say("I can look books up in our catalog and reserve them. Which title are you after?")


def _say(text: str) -> AIMessage:
    return AIMessage(content=text)


def _call(messages: list[BaseMessage], name: str, **args: Any) -> AIMessage:
    call_id = f"call_{len(messages)}"  # unique within the conversation
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])
