"""Real ADK agent packages written into a temporary directory for the ADK runner tests.

The probe agent's model is a scripted `BaseLlm` whose behaviour is chosen by the user's
message, so one agent covers sessions, tools, failures, hangs and concurrency:

    "whoami"        call the `whoami` tool (session, state, environment), answer with its result
    "think"         say something, call `whoami`, then answer (an intermediate response)
    "boom"          the model raises RuntimeError
    "tool crash"    call the `crash` tool, which raises ValueError
    "hang"          the model never answers
    "self cancel"   the model raises asyncio.CancelledError (nobody cancelled it)
    "slow"          answer after 0.3 s, counting how many conversations are in the model at once
    anything else   "echo: <message>"

Each package gets a fresh name: Python caches imported packages by name.
"""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

PROBE = '''
import asyncio
import json
import os

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import ToolContext
from google.genai import types

GREETING = os.environ.get("PROBE_GREETING", "unset")
KEPT = os.environ.get("PROBE_KEPT", "unset")
IN_MODEL = {"now": 0, "max": 0}


def whoami(tool_context: ToolContext) -> dict:
    """Who is asking, in which session."""
    session = tool_context.session
    return {
        "app_name": session.app_name,
        "user_id": session.user_id,
        "session_id": session.id,
        "state": {k: v for k, v in session.state.items() if not k.startswith("_")},
        "greeting": GREETING,
        "kept": KEPT,
    }


def crash(reason: str) -> dict:
    """Always fails."""
    raise ValueError("the crash tool failed: " + reason)


def _text(text):
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class ProbeLlm(BaseLlm):
    model: str = "probe"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1]
        result = next((p.function_response for p in last.parts or [] if p.function_response), None)
        if result is not None:
            yield _text(json.dumps(result.response, sort_keys=True))
            return
        said = " ".join(p.text or "" for p in last.parts or [])
        if said == "whoami":
            call = types.FunctionCall(name="whoami", args={})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                              usage_metadata=types.GenerateContentResponseUsageMetadata(
                                  prompt_token_count=7, candidates_token_count=3, thoughts_token_count=2))
        elif said == "think":
            call = types.FunctionCall(name="whoami", args={})
            yield LlmResponse(content=types.Content(role="model", parts=[
                types.Part(text="Let me check who you are."), types.Part(function_call=call)]))
        elif said == "boom":
            raise RuntimeError("the model exploded")
        elif said == "tool crash":
            call = types.FunctionCall(name="crash", args={"reason": "asked to"})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
        elif said == "hang":
            await asyncio.sleep(3600)
        elif said == "self cancel":
            raise asyncio.CancelledError()
        elif said == "slow":
            IN_MODEL["now"] += 1
            IN_MODEL["max"] = max(IN_MODEL["max"], IN_MODEL["now"])
            try:
                await asyncio.sleep(0.3)
            finally:
                IN_MODEL["now"] -= 1
            yield _text("slow answer")
        else:
            yield _text("echo: " + said)


root_agent = LlmAgent(name="probe", model=ProbeLlm(), instruction="Probe.", tools=[whoami, crash])
'''

EXPORTS = {
    "root_agent": "",
    "app": """
from google.adk.apps import App
from google.adk.plugins.base_plugin import BasePlugin


class Shout(BasePlugin):
    async def after_model_callback(self, *, callback_context, llm_response):
        for part in (llm_response.content.parts if llm_response.content else []):
            if part.text:
                part.text = part.text.upper()
        return None


app = App(name="probe_app", root_agent=root_agent, plugins=[Shout(name="shout")])
""",
    "get_agent_async": """
import contextlib

CLOSED = os.path.join(os.path.dirname(__file__), "closed.txt")
_root = root_agent
del root_agent


async def get_agent_async():
    stack = contextlib.AsyncExitStack()
    stack.callback(lambda: open(CLOSED, "w").write("closed"))
    return _root, stack
""",
}


def write_probe_agent(
    parent: Path, export: str = "root_agent", env: str | None = None, name: str | None = None
) -> Path:
    """A probe agent package below `parent` (its agent in agent.py); returns its directory."""
    directory = parent / (name or f"probe_{uuid.uuid4().hex[:10]}")
    directory.mkdir(parents=True)
    (directory / "__init__.py").write_text("from . import agent\n")
    (directory / "agent.py").write_text(textwrap.dedent(PROBE) + EXPORTS[export])
    if env is not None:
        (directory / ".env").write_text(env)
    return directory
