"""What a runner is asked to do and what it brings back: the typed hand-off between the
agent stage (pipeline/run_cases.py: agents, I/O) and the score stage (pipeline/score.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .core import CaseKey, Purpose, RunKey, RunnerKind
from .evalset.models import (
    Content,
    ConversationScenario,
    FunctionCall,
    FunctionResponse,
    InvocationEvent,
    SessionInput,
)


class CaseRunRequest(BaseModel):
    """One run of one case: its user turns, replayed in order in one session; or, for a
    scenario case (`scenario` set, `user_contents` empty), the turns the user simulator
    writes one by one (runners/base.py NextUser)."""

    model_config = ConfigDict(frozen=True)

    eval_set_id: str
    eval_id: str
    run: int  # 1-based
    session_input: SessionInput | None = None
    user_contents: list[Content]
    purpose: Purpose | None = None  # a run beyond the suite's own: why it runs
    scenario: ConversationScenario | None = None

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)

    @property
    def run_key(self) -> RunKey:
        return RunKey(self.eval_set_id, self.eval_id, self.run)

    @property
    def session_id(self) -> str:
        return f"{self.eval_set_id}.{self.eval_id}.run{self.run}"


class TokenUsage(BaseModel):
    prompt_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0


class ActualTurn(BaseModel):
    """The agent's behaviour on one user turn (`user_content`: the user's message, recorded
    for the turns of a scenario case, which the eval file does not hold)."""

    user_content: Content | None = None
    final_response: Content | None = None
    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[Any] = Field(default_factory=list)
    usage: TokenUsage | None = None
    duration_s: float = 0.0
    # Filled by the ADK runners, for metrics that read the raw turn as ADK records it
    # (LLM judges): the turn's events in ADK's InvocationEvents form, and ADK's
    # AppDetails ({"agent_details": {name: {name, instructions, tool_declarations}}}).
    invocation_events: list[InvocationEvent] | None = None
    app_details: Any = None
    # The in-process ADK runner: for each of `tool_responses`, what the event that carried
    # it did besides answering (runners/tool_answers.py EFFECTS: "state", "transfer", ...);
    # [] for none. None: not recorded (other runners), so such a call is never replayed.
    tool_effects: list[list[str]] | None = None


class ToolTally(BaseModel):
    """How a case-run's tool calls were answered (`--tools-from-eval-file`, `--replay-tools`;
    docs/hermetic-tools.md): from the eval file, from main's recording, or by the tool itself."""

    from_eval_file: int = 0
    from_recording: int = 0
    live: int = 0
    # the first call that found no answer, e.g. 'turn 1: lookup_order {"order_id": "B7"}
    # (no recorded call with these arguments)'; None: every call was answered
    first_miss: str | None = None


class CustomScore(BaseModel):
    """A custom metric's score of one case-run, computed in the agent stage."""

    overall: float | None = None
    invocations: list[float | None] = Field(default_factory=list)
    error: str | None = None


class SimulatorUsage(BaseModel):
    """The user simulator's Gemini calls for one case-run (results.Usage's simulator_*)."""

    calls: int = 0
    refused: int = 0  # requests refused (a cap, or not the relay's conversation): no call made
    prompt_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cost_usd: float | None = 0.0  # None: the model has no price


class Simulation(BaseModel):
    """How a scenario case-run's conversation ended, and what simulating it cost."""

    stop: str | None = None  # stop_signal, turn_limit; None: it ended otherwise (an error)
    usage: SimulatorUsage = Field(default_factory=SimulatorUsage)
    # why its first refused request was refused: the case-run errors with it
    refused: str | None = None


class CaseRunTrace(BaseModel):
    """A finished (or failed) case-run. `error` set means the run is errored;
    `turns` then holds only the turns that completed. `custom_scores`: the custom
    metrics' scores of a finished run, by metric name (scored beside the agent)."""

    eval_set_id: str
    eval_id: str
    run: int
    turns: list[ActualTurn] = Field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    custom_scores: dict[str, CustomScore] = Field(default_factory=dict)
    purpose: Purpose | None = None  # a run beyond the suite's own: why it runs
    # a scenario case-run: how its simulated conversation ended
    simulation: Simulation | None = None
    # why the case-run was not attempted (a scenario case without the user simulator): the
    # case is not_evaluated, never passed; accepted only for scenario cases
    not_run: str | None = None
    # what ADK logged during the case-run (the in-process runner: runners/log_capture.py),
    # tracebacks in full, capped; None when it logged nothing or the runner does not tell
    log: str | None = None
    # a run with hermetic tools (the in-process ADK runner): how its tool calls were answered
    tools: ToolTally | None = None

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)

    @property
    def run_key(self) -> RunKey:
        return RunKey(self.eval_set_id, self.eval_id, self.run)


@dataclass
class CaseRuns:
    """What the agent did: one trace per case-run of the plan (errored where it failed)."""

    runner: RunnerKind
    target: str | None
    started_at: datetime
    traces: list[CaseRunTrace]
    cancelled: bool = False
    # the google-adk the agent stage ran with (its process's; a PR's requirements may bring
    # another than the tool's): what Results record as adk_version
    adk_version: str | None = None


def installed_adk() -> str | None:
    """The version of google-adk this process would import, or None without it."""
    from importlib import metadata

    try:
        return metadata.version("google-adk")
    except metadata.PackageNotFoundError:
        return None


class UserTurnError(Exception):
    """No next user turn could be written (the user simulator failed): the case-run errors
    with this message, which says why in full."""


# The source of a case-run's user turns, asked before each turn with the turns so far:
# the next user message, or None when the conversation is over. Runners take one.
NextUser = Callable[[CaseRunRequest, Sequence[ActualTurn]], Awaitable[Content | None]]


async def fixed_turns(request: CaseRunRequest, turns: Sequence[ActualTurn]) -> Content | None:
    """The case's own user turns, in order (every static case)."""
    return request.user_contents[len(turns)] if len(turns) < len(request.user_contents) else None


def turn_place(request: CaseRunRequest, number: int) -> str:
    """'turn 2 of 3' (a static case) or 'simulated turn 2' (a scenario), for error messages."""
    if request.scenario is not None:
        return f"simulated turn {number}"
    return f"turn {number} of {len(request.user_contents)}"
