"""The Results file (`results.json`, schema "agent-eval-results/1"): docs/results.md.

Every later stage (baseline diff, reports, the action) reads this model, so it
is versioned and its JSON Schema is exported to schemas/results.schema.json.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field

from .core import Axis, CaseKey, RunnerKind, TrajectoryPolicy
from .evalset.models import Content, FunctionCall, FunctionResponse, LeanModel

SCHEMA: Final = "agent-eval-results/1"


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"
    NOT_EVALUATED = "not_evaluated"


class Source(LeanModel):
    repo: str | None = None
    sha: str | None = None
    ref: str | None = None
    run_id: str | None = None
    event: str | None = None


class SelectedPath(LeanModel):
    """One eval path of the run (an EVAL_PATH argument, an item of the `evals` input)."""

    path: str  # the file or directory, written as the eval sets' files are (display form)
    directory: bool = False
    ids: list[str] | None = None  # FILE:id1,id2: only these cases of the file


class Selection(LeanModel):
    """What the run was asked to evaluate, so that a comparison can tell a case the selection
    left out ("not run (selection)") from one deleted from its file (docs/statistics.md)."""

    paths: list[SelectedPath]
    # per eval set: the ids its file holds that a FILE:id filter left out
    unselected: dict[str, list[str]] = Field(default_factory=dict)


class GatePolicy(LeanModel):
    """The gate's policy the run was given (`--fail-on`, `--min-delta` resolved per axis);
    recorded so that a comparison can say when the two sides were gated differently."""

    fail_on: list[str]
    min_delta: dict[Axis, float] = Field(default_factory=dict)


# Efficiency (ADK's informational metrics, metrics/efficiency.py): counts and seconds, so
# never negative, never NaN.
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class RunConfig(LeanModel):
    runner: RunnerKind
    target: str | None = None  # the command, agent directory, server URL or history files
    num_runs: int = 1
    concurrency: int = 8
    timeout_s: float = 600.0
    trajectory_policy: TrajectoryPolicy | None = None
    judge_model: str | None = None
    # None in Results written before these were recorded
    selection: Selection | None = None
    gate: GatePolicy | None = None
    # --budget: the most each efficiency metric's per-case total may be (docs/results.md)
    budgets: dict[str, Amount] = Field(default_factory=dict)
    # --strip-thoughts: whether response_match_score read the model's thought parts as part
    # of the answer's text, as ADK does ("included"), or left them out ("stripped")
    response_thoughts: Literal["included", "stripped"] = "included"
    # --confirm-runs: the re-runs a regression could get before it is blamed; compare reads it
    # to tell a regression no re-run could confirm from one it kept unconfirmed (None: older
    # Results, whose regressions without re-runs stand)
    confirm_runs: int | None = None


class Shard(LeanModel):
    index: int  # 1..count
    count: int
    partition_hash: str  # the same for every shard of one partition of one suite
    cases_total: int  # cases in the whole partition, over all shards
    baseline_sha: str | None = None


class EvalSetEntry(LeanModel):
    eval_set_id: str
    file: str
    file_sha256: str
    form: Literal["evalset", "legacy_rows", "legacy_cases"]
    config: str  # the test_config.json used, or "ADK defaults"
    criteria: dict[str, dict[str, Any]]


class JudgeSample(LeanModel):
    """One answer of the judge model: its text as returned (None: no text, e.g. blocked)."""

    text: str | None = None
    finish_reason: str | None = None


class JudgeVerdict(LeanModel):
    """One judge request (its `num_samples` answers) for one turn of one run.

    `key` hashes everything that decides the verdict (the rendered prompt, model,
    generation config, samples, parser version); a later run with the same key
    reuses `samples` instead of calling the judge (`source` says where they came from).
    """

    key: str
    run: int
    turn: int  # 0-based
    request: str  # what was asked: verdict, rubrics, sentences, labels, safety
    step: int | None = None  # hallucinations_v1: which answer text of the turn
    source: Literal["call", "baseline", "cache", "repeat"] = "call"
    samples: list[JudgeSample] = Field(default_factory=list)
    score: float | None = None  # this request's voted score, where it has one
    error: str | None = None  # why no verdict came out of it (then it is never reused)


class JudgeRecord(LeanModel):
    """How a judged metric was judged for one case, and every verdict it used."""

    model: str
    prompt_version: str
    parser_version: str
    num_samples: int
    generation_config: dict[str, Any] = Field(default_factory=dict)
    note: str | None = None  # e.g. safety_v1 is our own judge, not ADK's Vertex AI one
    rubric_scores: list[dict[str, float | None]] = Field(default_factory=list)  # per run
    verdicts: list[JudgeVerdict] = Field(default_factory=list)


def case_score(
    runs: Sequence[float | None], turns: Sequence[Sequence[float | None]]
) -> float | None:
    """A metric's case score from its runs' scores and their per-turn scores, as ADK gives
    it: one run, its own score (adk eval); several, the mean of all their turns
    (AgentEvaluator), or of the run scores when a run has no per-turn scores (e.g. a custom
    metric) or no turn was scored. None when a run could not be scored."""
    if not runs or any(score is None for score in runs):
        return None
    if len(runs) == 1:
        return runs[0]
    pooled = [s for turn in turns for s in turn if s is not None]
    if not pooled or any(not turn for turn in turns):
        return statistics.mean(score for score in runs if score is not None)
    return statistics.mean(pooled)


def status_for(score: float | None, threshold: float) -> Status:
    """Passed at or above the threshold, failed below it, not evaluated without a score."""
    if score is None:
        return Status.NOT_EVALUATED
    return Status.PASSED if score >= threshold else Status.FAILED


class MetricResult(LeanModel):
    axis: Axis
    score: float | None  # mean over runs, ADK semantics; None = could not be computed
    threshold: float
    status: Status
    runs: list[float | None] = Field(default_factory=list)  # per-run case scores
    invocations: list[list[float | None]] = Field(default_factory=list)  # per run, per turn
    judge: JudgeRecord | None = None  # judged metrics: model, prompt version, verdicts
    error: str | None = None  # why it could not be computed


class InformationalResult(LeanModel):
    """An informational metric's result (e.g. per_turn_user_simulator_quality_v1, which grades
    the user simulator, not the agent): recorded and shown, on no axis, never part of the
    case's status or of a regression. Its fields mean what MetricResult's do."""

    score: float | None
    threshold: float
    status: Status
    runs: list[float | None] = Field(default_factory=list)
    invocations: list[list[float | None]] = Field(default_factory=list)
    judge: JudgeRecord | None = None
    error: str | None = None


class Expected(LeanModel):
    final_response: Content | None = None
    tool_uses: list[FunctionCall] = Field(default_factory=list)


class Actual(LeanModel):
    final_response: Content | None = None
    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)


class InvocationRecord(LeanModel):
    user_content: Content
    expected: Expected
    actual: Actual | None = None  # None: the run ended before this turn
    duration_s: float | None = None


class RunRecord(LeanModel):
    run: int
    invocations: list[InvocationRecord]
    error: str | None = None
    duration_s: float = 0.0
    # a confirmation re-run (compare/confirm.py): the regression it re-ran to confirm
    confirms: str | None = None
    # a scenario case's run: why its simulated conversation ended (stop_signal: the user
    # simulator said it was done; turn_limit: max_allowed_invocations); None otherwise
    stop: str | None = None


# Usage's counters (whole numbers that add up), by name.
USAGE_COUNTS = (
    "judge_calls",
    "judge_reused",
    "prompt_tokens",
    "output_tokens",
    "thinking_tokens",
    "judge_prompt_tokens",
    "judge_output_tokens",
    "judge_thinking_tokens",
    "simulator_calls",
    "simulator_prompt_tokens",
    "simulator_output_tokens",
    "simulator_thinking_tokens",
)


class Usage(LeanModel):
    judge_calls: int = 0  # judge requests answered (retries not counted)
    judge_reused: int = 0  # judge requests not made: a verdict was reused
    prompt_tokens: int = 0  # the agent's own tokens, as its runner reported them
    output_tokens: int = 0
    thinking_tokens: int = 0
    judge_prompt_tokens: int = 0  # the judge's, from Gemini's usageMetadata
    judge_output_tokens: int = 0
    judge_thinking_tokens: int = 0
    simulator_calls: int = 0  # the user simulator's Gemini calls (scenario cases)
    simulator_prompt_tokens: int = 0
    simulator_output_tokens: int = 0
    simulator_thinking_tokens: int = 0
    # Cost of the judge's and the user simulator's calls; None when there were none, or
    # when a model has no price.
    cost_usd: float | None = None

    def add(self, other: Usage) -> None:
        unpriced = any(
            u.cost_usd is None and u.judge_calls + u.simulator_calls > 0 for u in (self, other)
        )
        for name in USAGE_COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if unpriced:
            self.cost_usd = None  # a partial sum would understate the cost
        elif other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd


class EfficiencyResult(LeanModel):
    """One of ADK's efficiency metrics for one case, over its finished runs: recorded and
    reported, never a pass or a fail of the case (a budget only fails the gate)."""

    score: Amount | None  # ADK's value, per turn: one run's mean, several runs' turns pooled
    total: Amount | None  # per case: each run's turns summed, the mean over the runs
    runs: list[Amount | None] = Field(default_factory=list)  # per finished run, ADK's value
    invocations: list[list[Amount | None]] = Field(default_factory=list)  # per run, per turn
    budget: Amount | None = None  # --budget for this metric, if one was set
    over_budget: bool = False  # the total is above the budget


class CaseResult(LeanModel):
    eval_set_id: str
    eval_id: str
    file: str
    line: int  # where the case starts in its file
    case_sha256: str  # of the case's expected data and its eval_id: tells "expectation changed"
    # of the same without the eval_id (None before it was recorded): finds a renamed case
    content_sha256: str | None = None
    status: Status
    note: str | None = None  # why a case was not run or not evaluated
    # a conversation_scenario case: its user turns were simulated, nothing was expected
    scenario: bool = False
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    # informational metrics: never gate, never change the case's status
    informational: dict[str, InformationalResult] = Field(default_factory=dict)
    runs: list[RunRecord] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0
    # ADK's efficiency metrics by name (empty when no run finished, or before they were recorded)
    efficiency: dict[str, EfficiencyResult] = Field(default_factory=dict)

    @property
    def over_budget(self) -> list[str]:
        """The efficiency metrics whose budget this case exceeded."""
        return [name for name, result in self.efficiency.items() if result.over_budget]

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)


class Timing(LeanModel):
    started_at: datetime
    finished_at: datetime
    duration_s: float


class Results(LeanModel):
    schema_: Literal["agent-eval-results/1"] = Field(SCHEMA, alias="schema")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    tool_version: str
    adk_version: str | None = None
    partial: bool = False
    source: Source = Field(default_factory=Source)
    run_config: RunConfig
    shard: Shard | None = None
    eval_sets: list[EvalSetEntry]
    cases: list[CaseResult]
    usage: Usage = Field(default_factory=Usage)
    timing: Timing
    warnings: list[str] = Field(default_factory=list)

    model_config = ConfigDict(populate_by_name=True)

    def dump_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=False, indent=1)

    def write(self, path: Path) -> None:
        """Write atomically: a reader never sees half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(self.dump_json(), encoding="utf-8")
        tmp.replace(path)


def json_schema() -> dict[str, Any]:
    schema = Results.model_json_schema(by_alias=True, mode="serialization")
    schema["$id"] = "https://agent-eval-action/schemas/results.schema.json"
    schema["title"] = "agent-eval-action Results"
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m agent_eval_action.results > schemas/results.schema.json
    print(json_schema_text(), end="")
