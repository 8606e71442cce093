"""Run an ADK agent in this process, the way `adk eval` runs it (`--agent DIR`).

The agent directory is imported as ADK's tools import it: its `.env` is loaded
(found as ADK finds it, from the directory up to the root, but never above the
checkout's top, GITHUB_WORKSPACE; variables already set win), its parent goes on `sys.path`, and the package is imported by its
directory name. The agent is the first of `agent.app` (an ADK `App`, whose
plugins then apply), `agent.root_agent`, `await agent.get_agent_async()`.

Each case-run gets what `adk eval` gives a case: a fresh in-memory session
(app_name, user_id, session_id and state from `session_input`, else ADK's
defaults "EvaluationGenerator" and "test_user_id"), in-memory artifact and
memory services, and one `Runner.run_async` per user turn in that session. Its
turns are captured from the events as ADK captures them (adk_events.py). Unlike
`adk eval`, up to `--concurrency` case-runs run at once (ADK: 4), each within
`--timeout`, and a failing or hanging case-run fails alone. A process that a
case-run's tools start and that detaches (it outlives its parent) is killed when
that case-run ends (reaper.py); the agent's own children (an MCP server) live on.

With hermetic tools (`--tools-from-eval-file`, `--replay-tools`; tool_answers.py) the
recorder plugin answers a tool call from the eval file or main's recording before the
tool runs, and counts how each call was answered (docs/hermetic-tools.md). A call that
misses under `--replay-strict` stops its case-run, which the runner marks errored even if
the agent caught the exception.

What ADK logs while a case-run runs (a raising tool's traceback, logged at each level it
passes) is kept in its trace, capped, and stderr gets one line per error (log_capture.py).

A tool that blocks the event loop (a synchronous `time.sleep`, blocking I/O)
stalls every case-run in this process, as under `adk eval`; such agents are
better evaluated through `--command` or `--adk-api`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import importlib.util
import io
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import InputError
from ..evalset.models import Content
from ..files import read_text
from ..traces import ActualTurn, CaseRunRequest, CaseRunTrace, NextUser, fixed_turns
from . import log_capture
from .adk_events import DEFAULT_USER_ID, INSTALL_HINT, TurnCapture, new_session_id
from .base import OnTrace, RunnerStartError
from .pool import NO_EVENTS, CaseRunError, PlayTurn, describe_exception, run_case_run, run_pool
from .reaper import current
from .tool_answers import SESSION_TOOLS, AnswerBook, HermeticTools

# ADK's defaults for a case without session_input (evaluation_generator.py).
DEFAULT_APP_NAME = "EvaluationGenerator"
# Retries for transient model errors, as `adk eval` adds to every model request
# that has none (408, 429 and 5xx; 7 attempts, 5 s doubling up to 120 s).
RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)


def require_adk(flag: str) -> None:
    """Exit 2 with one line if google-adk is not installed."""
    if importlib.util.find_spec("google") is None or importlib.util.find_spec("google.adk") is None:
        raise InputError(f"{flag} needs google-adk, which is not installed: {INSTALL_HINT}")


def agent_directory(path: str) -> Path:
    """The agent directory named by `--agent`, checked before anything runs."""
    directory = Path(path)
    if not directory.exists():
        raise InputError("agent directory not found", path)
    if not directory.is_dir():
        raise InputError("--agent needs the agent's package directory, not a file", path)
    if not (directory / "__init__.py").is_file():
        raise InputError(
            "not a Python package (no __init__.py); an ADK agent directory has an "
            "__init__.py that imports its agent module",
            path,
        )
    name = directory.resolve().name
    if not name.isidentifier():
        raise InputError(
            f'the directory name "{name}" is not a Python identifier, so the agent package '
            "cannot be imported by it (rename it, e.g. with underscores)",
            path,
        )
    return directory


@dataclass
class LoadedAgent:
    directory: Path
    app: Any  # google.adk.apps.App | None
    root_agent: Any  # google.adk.agents.BaseAgent (or a workflow node)
    close: Callable[[], Any] | None = None  # get_agent_async's exit stack


def dotenv_folders(directory: Path, environ: Mapping[str, str] = os.environ) -> list[Path]:
    """Where the agent's `.env` is looked for, nearest first: ADK's walk from the agent's
    folder up to the root, stopped at the checkout's top (GITHUB_WORKSPACE) when the agent
    is in it. Above the checkout nothing is the repository's: in the action, main's code
    runs from a worktree under /tmp, where the PR's code may have left a `.env`."""
    folder = directory.resolve()
    walk = [folder, *folder.parents]
    top = environ.get("GITHUB_WORKSPACE")
    if top:
        top_folder = Path(top).resolve()
        if top_folder in walk:
            return walk[: walk.index(top_folder) + 1]
    return walk


def load_dotenv(directory: Path, environ: dict[str, str] | os._Environ = os.environ) -> Path | None:
    """Load the agent's `.env` as ADK does (the nearest of `dotenv_folders`); variables
    already set are kept. Skipped if ADK_DISABLE_LOAD_DOTENV is true. Read as every input
    file is (files/reading: capped; in the action, no link followed in the checkout).
    Returns the file loaded, if any."""
    if environ.get("ADK_DISABLE_LOAD_DOTENV", "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    from dotenv import dotenv_values  # google-adk depends on python-dotenv

    for candidate in dotenv_folders(directory, environ):
        dotenv = candidate / ".env"
        if not os.path.lexists(dotenv) or dotenv.is_dir():
            continue
        text = read_text(dotenv, str(dotenv))
        for key, value in dotenv_values(stream=io.StringIO(text)).items():
            if value is not None and key not in environ:
                environ[key] = value
        return dotenv
    return None


async def load_agent(directory: Path) -> LoadedAgent:
    """Import the agent package and find its agent; RunnerStartError says why not."""
    from google.adk.agents import BaseAgent
    from google.adk.apps import App

    where = directory.as_posix()
    # ADK imports its workflow engine lazily on the first turn (about a second); paid
    # here, it does not count in the first case-runs' durations.
    with contextlib.suppress(ImportError):
        importlib.import_module("google.adk.workflow")
    load_dotenv(directory)
    package = _import_package(directory)
    module = getattr(package, "agent", None)
    if not isinstance(module, ModuleType):
        module = package
        if (directory / "agent.py").is_file():
            module = _import(f"{package.__name__}.agent", directory)
    app = getattr(module, "app", None)
    if isinstance(app, App):
        return LoadedAgent(directory, app, app.root_agent)
    if hasattr(module, "root_agent"):
        agent = module.root_agent
        if not isinstance(agent, BaseAgent) and not _is_workflow_node(agent):
            raise RunnerStartError(
                f"{where}: root_agent is a {type(agent).__name__}, not an ADK agent"
            )
        return LoadedAgent(directory, None, agent)
    if hasattr(module, "get_agent_async"):
        try:
            result = await module.get_agent_async()
        except Exception as exc:
            raise RunnerStartError(
                f"{where}: get_agent_async() failed: {describe_exception(exc, directory)}"
            ) from None
        agent, stack = result if isinstance(result, tuple) else (result, None)
        close = getattr(stack, "aclose", None)
        return LoadedAgent(directory, None, agent, close)
    raise RunnerStartError(
        f"{where}: no agent found: define root_agent (or app, or get_agent_async) in "
        f"{directory.resolve().name}/agent.py, imported by its __init__.py"
    )


def _is_workflow_node(value: Any) -> bool:
    try:
        from google.adk.workflow import BaseNode
    except ImportError:
        return False
    return isinstance(value, BaseNode)


def _import_package(directory: Path) -> ModuleType:
    root = directory.resolve()
    name = root.name
    existing = sys.modules.get(name)
    if existing is not None and not _comes_from(existing, root):
        raise RunnerStartError(
            f"{directory.as_posix()}: cannot import the agent as package {name!r}: a module "
            f"of that name is already imported from {getattr(existing, '__file__', '?')}; "
            "rename the agent directory"
        )
    parent = str(root.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    package = _import(name, directory)
    if not _comes_from(package, root):
        raise RunnerStartError(
            f"{directory.as_posix()}: importing {name!r} found {package.__file__} instead; "
            "rename the agent directory"
        )
    return package


def _comes_from(module: ModuleType, root: Path) -> bool:
    file = getattr(module, "__file__", None)
    return file is not None and Path(file).resolve() == root / "__init__.py"


def _import(name: str, directory: Path) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise RunnerStartError(
            f"{directory.as_posix()}: cannot import the agent: {describe_exception(exc, directory)}"
        ) from None


async def run_adk_suite(
    requests: Sequence[CaseRunRequest],
    agent_dir: str | Path,
    *,
    concurrency: int = 8,
    timeout: float = 600.0,
    on_trace: OnTrace | None = None,
    next_user: NextUser = fixed_turns,
    tools: HermeticTools | None = None,
) -> list[CaseRunTrace]:
    """Run every case-run against the agent in `agent_dir`: one trace per request, in order.
    `tools`: answer tool calls from the eval file or a recording (hermetic tools)."""
    _quiet_cache_hint()
    agent = await load_agent(Path(agent_dir))
    if tools is not None:
        refuse_tool_callbacks(agent)
    reaper = current()
    describe = functools.partial(describe_exception, source_dir=agent.directory)

    async def run_one(request: CaseRunRequest) -> CaseRunTrace:
        # What the case-run's tools start carries its mark; what detached goes at its end.
        # What ADK logs meanwhile goes to the case-run's log.
        label = str(request.run_key)
        book = (
            None if tools is None else tools.book(request.eval_set_id, request.eval_id, request.run)
        )
        with reaper.case(), log_capture.case(label, describe) as log:
            trace = await run_case_run(
                request,
                functools.partial(_conversation, agent, book=book),
                timeout=timeout,
                source_dir=agent.directory,
                next_user=next_user,
            )
        trace.log = log.text()
        if book is not None:
            trace.tools = book.tally
            if book.strict_miss is not None:  # whatever the agent made of the exception
                trace.error = f"--replay-strict: a tool call found no answer: {book.strict_miss}"
        return trace

    try:
        with log_capture.routed():
            return await run_pool(
                requests,
                run_one,
                concurrency=concurrency,
                on_trace=on_trace,
            )
    finally:
        if agent.close is not None:
            with contextlib.suppress(Exception):
                await agent.close()


@functools.cache
def _quiet_cache_hint() -> None:
    """Drop ADK's per-app hint that agent transfers run without a context cache: it is
    about production cost, not about the eval, and would head every run's output."""

    def keep(record: logging.LogRecord) -> bool:
        return "has no context_cache_config" not in record.getMessage()

    logging.getLogger("google_adk.google.adk.runners").addFilter(keep)


TOOL_CALLBACKS = ("before_tool_callback", "after_tool_callback", "on_tool_error_callback")


def refuse_tool_callbacks(agent: LoadedAgent) -> None:
    """RunnerStartError when the agent (any agent of its tree) or one of its App's plugins
    has tool callbacks of its own: a plugin's answer skips an agent's before-tool callbacks,
    and a recorded answer already went through the after-tool ones, so answering its calls
    would hide what those callbacks do (docs/hermetic-tools.md)."""
    from google.adk.plugins.base_plugin import BasePlugin

    where = agent.directory.as_posix()
    for node in _agents(agent.root_agent):
        for name in TOOL_CALLBACKS:
            if getattr(node, name, None):
                raise RunnerStartError(
                    f"{where}: agent {getattr(node, 'name', '?')!r} has its own {name}, which "
                    "answered tool calls would skip or run twice: --tools-from-eval-file and "
                    "--replay-tools need an agent without tool callbacks"
                )
    for plugin in getattr(agent.app, "plugins", None) or ():
        for name in TOOL_CALLBACKS:
            if getattr(type(plugin), name, None) is not getattr(BasePlugin, name):
                raise RunnerStartError(
                    f"{where}: the app's plugin {getattr(plugin, 'name', '?')!r} defines {name}, "
                    "which answered tool calls would skip or run twice: --tools-from-eval-file "
                    "and --replay-tools need an app without tool-callback plugins"
                )


def _agents(root: Any) -> list[Any]:
    """The agent and every agent below it: sub-agents and agents used as tools."""
    seen: list[Any] = []
    pending = [root]
    while pending:
        node = pending.pop()
        if any(node is known for known in seen):
            continue
        seen.append(node)
        pending += list(getattr(node, "sub_agents", None) or ())
        for tool in getattr(node, "tools", None) or ():
            inner = getattr(tool, "agent", None)
            if inner is not None:
                pending.append(inner)
    return seen


def _never_answered(tool: Any) -> bool:
    """A tool whose call always runs: a sub-agent as a tool (its own trajectory would
    vanish), ADK's session tools (transfer_to_agent, exit_loop), a long-running tool."""
    from google.adk.tools.agent_tool import AgentTool

    return (
        isinstance(tool, AgentTool)
        or tool.name in SESSION_TOOLS
        or bool(getattr(tool, "is_long_running", False))
    )


@contextlib.asynccontextmanager
async def _conversation(
    agent: LoadedAgent, request: CaseRunRequest, *, book: AnswerBook | None = None
) -> AsyncIterator[PlayTurn]:
    """One case-run's session and Runner, as ADK's EvaluationGenerator sets them up."""
    from google.adk.apps import App
    from google.adk.artifacts import InMemoryArtifactService
    from google.adk.memory import InMemoryMemoryService
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    session_input = request.session_input
    app_name = session_input.app_name if session_input else DEFAULT_APP_NAME
    user_id = session_input.user_id if session_input else DEFAULT_USER_ID
    sessions = InMemorySessionService()
    session = await sessions.create_session(
        app_name=app_name,
        user_id=user_id,
        state=copy.deepcopy(session_input.state) if session_input else {},
        session_id=(session_input.session_id if session_input else None) or new_session_id(request),
    )
    recorder = _recorder_class()(book)
    if agent.app is not None:
        app = agent.app.model_copy(update={"plugins": [*agent.app.plugins, recorder]})
    else:
        # As Runner(app_name=..., agent=...) does, without its deprecated `plugins` path.
        app = App.model_construct(name=app_name, root_agent=agent.root_agent, plugins=[recorder])
    runner = Runner(
        app=app,
        app_name=app_name,
        session_service=sessions,
        artifact_service=InMemoryArtifactService(),
        memory_service=InMemoryMemoryService(),
    )
    turn_index = 0
    async with runner:

        async def play(user_content: Content) -> ActualTurn:
            nonlocal turn_index
            message = types.Content.model_validate_json(
                user_content.model_dump_json(exclude_none=True)
            )
            capture = TurnCapture()
            if book is not None:
                book.turn = turn_index
            started = time.monotonic()
            events = runner.run_async(user_id=user_id, session_id=session.id, new_message=message)
            async with contextlib.aclosing(events):
                async for event in events:
                    capture.add(
                        event.model_dump(mode="json", exclude_none=True),
                        final=event.is_final_response(),
                    )
            if capture.empty:
                raise CaseRunError(NO_EVENTS)
            turn_index += 1
            return capture.turn(time.monotonic() - started, recorder.take())

        yield play


@functools.cache
def _recorder_class() -> type:
    """A plugin that does what `adk eval`'s internal plugins do for a case-run: record each
    agent's instructions and tool declarations (ADK's AppDetails), and give model requests
    without retry options ADK's eval retries. It also tells the case-run's log which tool
    raised an exception (ADK's log of it names none), and lets the exception go on. With
    an answer book (hermetic tools) it answers tool calls before they run."""
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import types

    retry = types.HttpRetryOptions(
        attempts=7,
        initial_delay=5.0,
        max_delay=120.0,
        exp_base=2.0,
        http_status_codes=list(RETRY_STATUS_CODES),
    )

    class EvalRecorder(BasePlugin):
        def __init__(self, book: AnswerBook | None = None) -> None:
            super().__init__(name="agent_eval_action_recorder")
            self._agents: dict[str, dict[str, Any]] = {}
            self._book = book

        async def before_tool_callback(self, *, tool, tool_args, tool_context):
            book = self._book
            if book is None:
                return None
            if _never_answered(tool):
                book.live()
                return None
            answer = book.answer(tool.name, tool_args)  # StrictMiss stops the case-run
            return None if answer is None else copy.deepcopy(answer.response)

        async def before_model_callback(self, *, callback_context, llm_request):
            config = llm_request.config = llm_request.config or types.GenerateContentConfig()
            config.http_options = config.http_options or types.HttpOptions()
            config.http_options.retry_options = config.http_options.retry_options or retry
            name = callback_context.agent_name
            if name not in self._agents:
                self._agents[name] = {
                    "name": name,
                    "instructions": _jsonable(config.system_instruction),
                    "tool_declarations": [_jsonable(tool) for tool in config.tools or ()],
                }
            return None

        async def on_tool_error_callback(self, *, tool, tool_args, tool_context, error):
            log = log_capture.current()
            if log is not None:
                log.tool_raised(tool.name, error)
            return None

        def take(self) -> dict[str, Any]:
            """This turn's AppDetails; the next turn starts afresh."""
            agents, self._agents = self._agents, {}
            return {"agent_details": agents}

    return EvalRecorder


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=True)
    return getattr(value, "__name__", None) or repr(value)
