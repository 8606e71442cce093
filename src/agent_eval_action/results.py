"""The Results file (`results.json`, schema "agent-eval-results/1"): docs/results.md.

Every later stage (baseline diff, reports, the action) reads these records, so they are
versioned and their JSON Schema is exported to schemas/results.schema.json.

Records, not input models: a Results holds millions of values at 10,000+ cases, so its
types are msgspec Structs, small by construction (fixed slots, no per-instance dict,
`gc=False`: a record never refers back to what holds it, so the cyclic collector need
not track it), decoded straight from JSON bytes with strict types. The eval files and
configs a user writes stay pydantic (aliases, validators, line-numbered errors:
evalset/models.py); a record's content is its own small copy of their content types.
Structs do not validate on construction: code builds records from values already typed.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Final, Literal, Self, TypeVar

import msgspec

from .core import AXES, Axis, CaseKey, Purpose, RunKind, RunnerKind, TrajectoryPolicy
from .files import Buffer, Sink, replacing

SCHEMA: Final = "agent-eval-results/1"

# A moment in time, with its time zone (written as RFC 3339: "2026-12-01T12:00:00Z").
Instant = Annotated[datetime, msgspec.Meta(tz=True)]


class Record(msgspec.Struct, kw_only=True, gc=False):
    """A record: keyword-built, unknown keys in its JSON ignored (later versions add
    optional fields), every field written out (None as null)."""

    def replace(self, **changes: Any) -> Self:
        """A shallow copy with these fields changed."""
        return msgspec.structs.replace(self, **changes)


class _Sparse(
    msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, forbid_unknown_fields=True
):
    """A content type: written without its unset (None) fields, unknown keys refused (as
    ADK's and google-genai's models refuse them)."""


class FunctionCall(_Sparse, kw_only=True):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None
    partial_args: Any = None
    will_continue: bool | None = None


class FunctionResponse(_Sparse, kw_only=True):
    name: str | None = None
    response: dict[str, Any] | None = None
    id: str | None = None
    will_continue: bool | None = None
    scheduling: Any = None
    parts: Any = None


class Part(_Sparse, kw_only=True):
    """One part of a content, as google-genai's Part: the four fields a metric or report
    reads, then the rest (kept as written, interpreted by nothing here). An unset field is
    an empty 8-byte slot: 152 bytes a part."""

    text: str | None = None
    thought: bool | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
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


class Content(msgspec.Struct, kw_only=True, gc=False, forbid_unknown_fields=True):
    parts: list[Part] | None = None
    role: str | None = None

    @classmethod
    def from_text(cls, text: str, role: str) -> Content:
        return cls(role=role, parts=[Part(text=text)])

    def text(self) -> str:
        """ADK's response text: the non-empty text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts or () if p.text)


_Content = TypeVar("_Content", Content, FunctionCall, FunctionResponse)


def record_of(value: Any, kind: type[_Content]) -> _Content:
    """The record of an eval file's or a runner's content (a pydantic model of the same
    fields): the same JSON, as a record."""
    return msgspec.convert(value.model_dump(mode="json", exclude_none=True), kind)


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"
    NOT_EVALUATED = "not_evaluated"


class Source(Record, kw_only=True):
    repo: str | None = None
    sha: str | None = None
    ref: str | None = None
    run_id: str | None = None
    event: str | None = None


class SelectedPath(Record, kw_only=True):
    """One eval path of the run (an EVAL_PATH argument, an item of the `evals` input)."""

    path: str  # the file or directory, written as the eval sets' files are (display form)
    directory: bool = False
    ids: list[str] | None = None  # FILE:id1,id2: only these cases of the file


class Selection(Record, kw_only=True):
    """What the run was asked to evaluate, so that a comparison can tell a case the selection
    left out ("not run (selection)") from one deleted from its file (docs/statistics.md)."""

    paths: list[SelectedPath]
    # per eval set: the ids its file holds that a FILE:id filter left out
    unselected: dict[str, list[str]] = msgspec.field(default_factory=dict)


class GatePolicy(Record, kw_only=True):
    """The gate's policy the run was given (`--fail-on`, `--min-delta` resolved per axis);
    recorded so that a comparison can say when the two sides were gated differently."""

    fail_on: list[str]
    min_delta: dict[Axis, float] = msgspec.field(default_factory=dict)


# Efficiency (ADK's informational metrics, metrics/efficiency.py): counts and seconds, so
# never negative (nor NaN, which JSON cannot hold; compare/sanity.py checks built ones).
Amount = Annotated[float, msgspec.Meta(ge=0)]


class RunConfig(Record, kw_only=True):
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
    budgets: dict[str, Amount] = msgspec.field(default_factory=dict)
    # --strip-thoughts: whether response_match_score read the model's thought parts as part
    # of the answer's text, as ADK does ("included"), or left them out ("stripped")
    response_thoughts: Literal["included", "stripped"] = "included"
    # --confirm-runs: the re-runs a regression could get before it is blamed; compare reads it
    # to tell a regression no re-run could confirm from one it kept unconfirmed (None: older
    # Results, whose regressions without re-runs stand)
    confirm_runs: int | None = None


class Shard(Record, kw_only=True):
    index: int  # 1..count
    count: int
    partition_hash: str  # the same for every shard of one partition of one suite
    cases_total: int  # cases in the whole partition, over all shards
    baseline_sha: str | None = None
    # the whole suite's cases a comparison pairs with the baseline (by key or renamed): the
    # family a shard's per-case evidence is held over, as the merged suite's is (None: no
    # baseline, or older Results)
    cases_compared: int | None = None


class EvalSetEntry(Record, kw_only=True):
    eval_set_id: str
    file: str
    file_sha256: str
    form: Literal["evalset", "legacy_rows", "legacy_cases"]
    config: str  # the test_config.json used, or "ADK defaults"
    criteria: dict[str, dict[str, Any]]


class JudgeSample(Record, kw_only=True):
    """One answer of the judge model: its text as returned (None: no text, e.g. blocked)."""

    text: str | None = None
    finish_reason: str | None = None


# where a verdict's samples came from: a judge call, or reused (verdict reuse: cache.py)
VerdictSource = Literal["call", "baseline", "cache", "repeat"]


class JudgeVerdict(Record, kw_only=True):
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
    source: VerdictSource = "call"
    samples: list[JudgeSample] = msgspec.field(default_factory=list)
    score: float | None = None  # this request's voted score, where it has one
    error: str | None = None  # why no verdict came out of it (then it is never reused)


class JudgeRecord(Record, kw_only=True):
    """How a judged metric was judged for one case, and every verdict it used."""

    model: str
    prompt_version: str
    parser_version: str
    num_samples: int
    generation_config: dict[str, Any] = msgspec.field(default_factory=dict)
    note: str | None = None  # e.g. safety_v1 is our own judge, not ADK's Vertex AI one
    rubric_scores: list[dict[str, float | None]] = msgspec.field(default_factory=list)  # per run
    verdicts: list[JudgeVerdict] = msgspec.field(default_factory=list)


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


class MetricResult(Record, kw_only=True):
    axis: Axis
    score: float | None  # mean over runs, ADK semantics; None = could not be computed
    threshold: float
    status: Status
    runs: tuple[float | None, ...] = ()  # per-run case scores
    invocations: tuple[tuple[float | None, ...], ...] = ()  # per run, per turn
    judge: JudgeRecord | None = None  # judged metrics: model, prompt version, verdicts
    error: str | None = None  # why it could not be computed


class InformationalResult(Record, kw_only=True):
    """An informational metric's result (e.g. per_turn_user_simulator_quality_v1, which grades
    the user simulator, not the agent): recorded and shown, on no axis, never part of the
    case's status or of a regression. Its fields mean what MetricResult's do."""

    score: float | None
    threshold: float
    status: Status
    runs: tuple[float | None, ...] = ()
    invocations: tuple[tuple[float | None, ...], ...] = ()
    judge: JudgeRecord | None = None
    error: str | None = None


class Expected(Record, kw_only=True):
    final_response: Content | None = None
    tool_uses: list[FunctionCall] = msgspec.field(default_factory=list)


class Actual(Record, kw_only=True):
    final_response: Content | None = None
    tool_uses: list[FunctionCall] = msgspec.field(default_factory=list)
    tool_responses: list[FunctionResponse] = msgspec.field(default_factory=list)


class InvocationRecord(Record, kw_only=True):
    user_content: Content
    expected: Expected
    actual: Actual | None = None  # None: the run ended before this turn
    duration_s: float | None = None


_TURNS: Final = msgspec.json.Decoder(list[InvocationRecord])
_TURNS_JSON: Final = msgspec.json.Encoder()

if TYPE_CHECKING:
    # A run's turns: decoded records, or (read from a file) their JSON, decoded on first use.
    Turns = msgspec.Raw | list[InvocationRecord]
else:
    Turns = msgspec.Raw  # what msgspec decodes the field as: its JSON, kept as it is


def behaviour_fingerprint(turns: Sequence[InvocationRecord]) -> str:
    """What a run did, as one string: each finished turn's tool calls (name and arguments)
    and its final answer text, hashed. Two runs with the same fingerprint behaved the same
    to everything compare looks at (compare/divergence.py)."""
    behaviour = [
        [[[c.name, c.args] for c in inv.actual.tool_uses], _answer(inv.actual.final_response)]
        for inv in turns
        if inv.actual is not None
    ]
    text = _BEHAVIOUR_JSON.encode(behaviour)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def scenario_fingerprint(turns: Sequence[InvocationRecord], scores: dict[str, float | None]) -> str:
    """A scenario run's behaviour (docs/statistics.md, "Simulated conversations"): its tool
    calls over the conversation as a multiset, and its score on every metric, hashed; the
    simulated user's words do not count."""
    calls = sorted(
        _BEHAVIOUR_JSON.encode([c.name, c.args])
        for inv in turns
        if inv.actual is not None
        for c in inv.actual.tool_uses
    )
    text = _BEHAVIOUR_JSON.encode(["scenario", calls, scores])
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# json.dumps(turns, sort_keys=True, ensure_ascii=False), without a new encoder per call.
_BEHAVIOUR_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


def _answer(content: Content | None) -> str | None:
    return None if content is None else content.text()


# How `runs[].confirms` begins for each kind of run beyond the suite's own, as every version
# writes it: Results written before `runs[].kind` say their runs' kinds only so (`kind_of`),
# and a comment job of an older version reads a newer run's kinds so.
PAIRED_RUN = "paired run on the merge-base"  # then " <sha>: " and what it was paired with
SUITE_ROUND = "the suite-level test"
SAMPLING_RUN = "sampling run on main"


def kind_of(confirms: str | None) -> tuple[RunKind, RunKind | None]:
    """A run's (kind, paired_with) from its `confirms` text alone: how Results written
    before `runs[].kind` are read, once, here."""
    if confirms is None:
        return "suite", None
    if confirms.startswith(SAMPLING_RUN):
        return "sampling", None
    if confirms.startswith(SUITE_ROUND):
        return "suite_round", None
    if confirms.startswith(PAIRED_RUN):
        paired_with = confirms.partition(": ")[2]
        return "paired", "suite_round" if paired_with.startswith(SUITE_ROUND) else "confirmation"
    return "confirmation", None


def purpose_fields(why: Purpose | None) -> dict[str, Any]:
    """A RunRecord's fields that say why it ran (None: one of the suite's own runs)."""
    if why is None:
        return {"confirms": None, "kind": "suite", "paired_with": None}
    return {"confirms": why.text, "kind": why.kind, "paired_with": why.paired_with}


class ToolCounts(Record, kw_only=True):
    """How a run's tool calls were answered (--tools-from-eval-file, --replay-tools)."""

    from_eval_file: int = 0
    from_recording: int = 0
    live: int = 0
    first_miss: str | None = None  # the first call that found no answer


class RunRecord(Record, kw_only=True):
    run: int
    # Its turns (`turns()` reads them): a Results read from a file keeps each run's turns
    # as their JSON until something asks for them, so a comparison that needs only the
    # fingerprints never builds them.
    invocations: Turns
    error: str | None = None
    duration_s: float = 0.0
    # a run beyond the suite's own, worded for people: what it re-ran to confirm (begins as
    # PAIRED_RUN, SUITE_ROUND and SAMPLING_RUN say, for older readers)
    confirms: str | None = None
    # why it ran (core.RunKind) and, a paired run, the kind of the run it pairs with; None
    # in Results written before them (`purpose` then reads `confirms`)
    kind: RunKind | None = None
    paired_with: RunKind | None = None
    # a scenario case's run: why its simulated conversation ended (stop_signal: the user
    # simulator said it was done; turn_limit: max_allowed_invocations); None otherwise
    stop: str | None = None
    # behaviour_fingerprint(turns), written by the score stage (None before it was
    # recorded: then it is computed from the turns)
    fingerprint: str | None = None
    # what ADK logged during the run (the in-process runner: tracebacks in full, at most
    # runners/log_capture.py LOG_CHARS characters); None when nothing was, or not recorded
    log: str | None = None
    # a run with hermetic tools: how its tool calls were answered; None: every tool ran
    tools: ToolCounts | None = None
    # per turn, per tool response of its actual turn, the non-empty actions of the event that
    # carried it ("state_delta", "transfer_to_agent", ...; [] none), which --replay-tools
    # reads: a call that did more than answer is never replayed. None (the run's, or a
    # turn's): not recorded (older Results, runners that see no event actions). Kept beside
    # the turns, not in them, so that older Results' turns write back unchanged.
    tool_effects: list[list[list[str]] | None] | None = None

    def purpose(self) -> tuple[RunKind, RunKind | None]:
        """Why the run ran: (kind, paired_with), as recorded, else as `confirms` says."""
        if self.kind is not None:
            return self.kind, self.paired_with
        return kind_of(self.confirms)

    def turns(self, *, keep: bool = True) -> list[InvocationRecord]:
        """The run's turns, decoded from their JSON on first use (and kept, unless `keep` is
        False: a pass that only checks them). Raises msgspec.ValidationError when that
        JSON is not a list of turns."""
        turns = self.invocations
        if isinstance(turns, msgspec.Raw):
            turns = _TURNS.decode(turns)
            if keep:
                self.invocations = turns
        return turns

    def settle(self, *, keep: bool = True) -> list[InvocationRecord]:
        """The run's turns, decoded (msgspec.ValidationError when their JSON is not a list
        of turns); read from a file, their JSON is kept again compact and of its own, no
        longer holding on to the whole file. What the loader's check calls
        (compare/sanity.py): each run is decoded once at load. `keep` False (main's record
        only: an older baseline): a run whose fingerprint is recorded lets its turns go
        unread, and has none."""
        if not keep and self.fingerprint is not None:
            self.invocations = []
            return []
        turns = self.invocations
        if isinstance(turns, msgspec.Raw):
            turns = _TURNS.decode(turns)
            self.invocations = msgspec.Raw(_TURNS_JSON.encode(turns))
        return turns

    def behaviour(self) -> str:
        """The run's behaviour fingerprint: as recorded, else computed from its turns."""
        if self.fingerprint is not None:
            return self.fingerprint
        return behaviour_fingerprint(self.turns(keep=False))


# Usage's counters (whole numbers that add up), by name.
USAGE_COUNTS = (
    "judge_calls",
    "judge_reused",
    "judge_refused",
    "prompt_tokens",
    "output_tokens",
    "thinking_tokens",
    "judge_prompt_tokens",
    "judge_output_tokens",
    "judge_thinking_tokens",
    "simulator_calls",
    "simulator_refused",
    "simulator_prompt_tokens",
    "simulator_output_tokens",
    "simulator_thinking_tokens",
)


class Usage(Record, kw_only=True):
    judge_calls: int = 0  # judge requests answered (retries not counted)
    judge_reused: int = 0  # judge requests not made: a verdict was reused
    # judge calls not made: the job's calls on the key were spent (metrics/judge/budget.py)
    judge_refused: int = 0
    prompt_tokens: int = 0  # the agent's own tokens, as its runner reported them
    output_tokens: int = 0
    thinking_tokens: int = 0
    judge_prompt_tokens: int = 0  # the judge's, from Gemini's usageMetadata
    judge_output_tokens: int = 0
    judge_thinking_tokens: int = 0
    simulator_calls: int = 0  # the user simulator's Gemini calls (scenario cases)
    # its requests refused (at a cap, or not the conversation the relay held): no call made
    simulator_refused: int = 0
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


class EfficiencyResult(Record, kw_only=True):
    """One of ADK's efficiency metrics for one case, over its finished runs: recorded and
    reported, never a pass or a fail of the case (a budget only fails the gate)."""

    score: Amount | None  # ADK's value, per turn: one run's mean, several runs' turns pooled
    total: Amount | None  # per case: each run's turns summed, the mean over the runs
    runs: tuple[Amount | None, ...] = ()  # per finished run
    invocations: tuple[tuple[Amount | None, ...], ...] = ()  # per turn
    budget: Amount | None = None  # --budget for this metric, if one was set
    over_budget: bool = False  # the total is above the budget
    # a timed metric of a case whose runs had tool calls answered instead of run (hermetic
    # tools): its time leaves the tools' out, so no budget judges it and no change is said
    answered: bool = False


class CaseResult(Record, kw_only=True):
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
    metrics: dict[str, MetricResult] = msgspec.field(default_factory=dict)
    # informational metrics: never gate, never change the case's status
    informational: dict[str, InformationalResult] = msgspec.field(default_factory=dict)
    runs: list[RunRecord] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    duration_s: float = 0.0
    # ADK's efficiency metrics by name (empty when no run finished, or before they were recorded)
    efficiency: dict[str, EfficiencyResult] = msgspec.field(default_factory=dict)

    @property
    def over_budget(self) -> list[str]:
        """The efficiency metrics whose budget this case exceeded."""
        return [name for name, result in self.efficiency.items() if result.over_budget]

    @property
    def key(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)


class Timing(Record, kw_only=True):
    started_at: Instant
    finished_at: Instant
    duration_s: float


def _now() -> datetime:
    return datetime.now(UTC)


class Results(Record, kw_only=True):
    schema_: Literal["agent-eval-results/1"] = msgspec.field(default=SCHEMA, name="schema")
    created_at: Instant = msgspec.field(default_factory=_now)
    tool_version: str
    adk_version: str | None = None
    partial: bool = False
    source: Source = msgspec.field(default_factory=Source)
    run_config: RunConfig
    shard: Shard | None = None
    # how many shards' Results were merged into these (compare/merge.py); None: not merged.
    # No agent runs after a merge, so its comparison takes no suite rounds.
    merged_shards: int | None = None
    eval_sets: list[EvalSetEntry]
    cases: list[CaseResult]
    usage: Usage = msgspec.field(default_factory=Usage)
    timing: Timing
    warnings: list[str] = msgspec.field(default_factory=list)

    @classmethod
    def from_json(cls, data: Buffer | str) -> Results:
        """Results from JSON, types checked (msgspec.ValidationError, msgspec.DecodeError
        otherwise); each run's turns stay JSON until read (RunRecord.turns). Reading a file
        that may be bad input: compare/loading.py."""
        return _RESULTS.decode(data)

    def dump_json(self) -> str:
        return dump_json(self)

    def write(self, path: Path) -> None:
        """Write the bytes of `dump_json` atomically (a reader never sees half a file), one
        case at a time: 100,000 cases are hundreds of MB of JSON, never held at once."""
        write_json(self, "cases", path)

    def stream(self, out: BinaryIO) -> None:
        """Write `dump_json` and a line break to `out`, a few cases at a time."""
        stream_json(self, "cases", out, end=b"\n")


_RESULTS: Final = msgspec.json.Decoder(Results)
_ENCODER: Final = msgspec.json.Encoder()


def dump_json(record: msgspec.Struct) -> str:
    """A record (Results, Diff) as the JSON written to files: one space of indentation."""
    return msgspec.json.format(_ENCODER.encode(record), indent=1).decode("utf-8")


_OPEN, _CLOSE = b"[\n [\n", b"\n ]\n]"  # around a list of items formatted inside brackets
# Items (cases) encoded at a time: a call per item cost a third of writing 100,000 cases
_BATCH = 64


def write_json(record: Record, items: str, path: Path, *, end: bytes = b"") -> None:
    """Write `dump_json(record)`, then `end`, to `path` atomically (a temporary file beside
    it, then renamed; removed if anything fails), as stream_json writes it."""
    with replacing(path) as out:
        stream_json(record, items, out, end=end)


def stream_json(record: Record, items: str, out: Sink, *, end: bytes = b"") -> None:
    """Write `dump_json(record)`, then `end`, to `out`, with its list field `items` (a
    top-level key of its JSON, never omitted) encoded _BATCH items at a time, so that only
    their JSON is in memory at once.

    The record is formatted without the items (their key holds `[]`), and each batch on its
    own, as a list inside brackets so that its items come out two levels deep, as in the
    record's list; the list's place is found by its key at the first level of indentation
    (a line break never occurs inside a JSON string, so no string can look like it)."""
    skeleton = msgspec.json.format(_ENCODER.encode(record.replace(**{items: []})), indent=1)
    key = f'\n "{items}": '.encode()
    at = skeleton.index(key + b"[]") + len(key)
    values = getattr(record, items)
    if not values:
        out.write(skeleton + end)
        return
    out.write(skeleton[:at] + b"[")
    for start in range(0, len(values), _BATCH):
        batch = _ENCODER.encode(values[start : start + _BATCH])
        nested = msgspec.json.format(b"[" + batch + b"]", indent=1)
        out.write(b",\n" if start else b"\n")
        out.write(memoryview(nested)[len(_OPEN) : -len(_CLOSE)])
    out.write(b"\n ]" + skeleton[at + 2 :] + end)


def json_schema() -> dict[str, Any]:
    (ref, _), defs = msgspec.json.schema_components([Results, InvocationRecord])
    # a run's turns are kept as JSON when read (RunRecord.Turns): their schema is the list's
    defs["RunRecord"]["properties"]["invocations"] = {
        "type": "array",
        "items": {"$ref": "#/$defs/InvocationRecord"},
    }
    # msgspec does not say which keys a dict of Literal keys takes
    defs["GatePolicy"]["properties"]["min_delta"]["propertyNames"] = {"enum": list(AXES)}
    schema = {**ref, "$defs": defs}
    schema["$id"] = "https://agent-eval-action/schemas/results.schema.json"
    schema["title"] = "agent-eval-action Results"
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m agent_eval_action.results > schemas/results.schema.json
    print(json_schema_text(), end="")
