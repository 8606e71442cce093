"""What every Results must be before anything computes with it or shows it (docs/security.md).

A Results file may come from a fork's run (the fork-safe pair's artifact, a shard) or be
written by PR code (the eval child runs it), so the records' types are not enough: a score of
1e308 overflows the report's arithmetic, a NUL in a file name breaks the path handling of
the check run, a control character in an eval id breaks the lines it is shown on. Here:

- every number the comparison or the report computes with is finite and at most
  MAX_MAGNITUDE in size; counts are whole numbers within 0..MAX_COUNT; a shard's count is
  at most MAX_SHARDS;
- identifiers, file paths, metric names, hashes and the `source` fields have no control
  characters (nor line separators or bidirectional overrides) and a bounded length;
- `check_bounded`: the scores of each metric declared to score within [0, 1] are within
  it. Custom metrics and counts are not bounded. compare/ does not import metrics/, so the
  caller says which metrics are (pipeline/bounds.py asks the metric registry).

Checking a run's turns decodes their JSON (kept as read until then) and leaves it compact
and of its own (`RunRecord.settle`), so a loaded Results no longer holds the file's bytes.

Free text (answers, tool arguments, errors, notes, warnings) is left as it is: the report
escapes it wherever it is shown. But no string anywhere may hold half of a UTF-16 pair
(`"\\udc00"` alone): Python reads it, nothing can write it out again (the report, the
comment, results.json), and no Results this tool writes has one (`check_text`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from ..errors import InputError
from ..files.jsonpos import one_line
from ..files.reading import Buffer
from ..results import USAGE_COUNTS, CaseResult, InvocationRecord, MetricResult, Results, RunRecord

MAX_MAGNITUDE = 1e12  # far above any score, duration or cost; far below float overflow
MAX_COUNT = 2**53  # tokens, calls, lines, run and turn numbers: exact as floats
MAX_SHARDS = 10_000  # a matrix has at most 256 jobs
MAX_ID_CHARS = 1024  # eval set ids, eval ids, metric names, hashes, versions, source fields
MAX_PATH_CHARS = 4096  # file paths
MAX_TARGET_CHARS = 65_536  # run_config.target: a command, or a list of files

# C0 and C1 controls (NUL, tab, newline, ESC, ...), DEL, the line and paragraph separators,
# and the bidirectional overrides and isolates (they reorder what is shown).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

Bounded = Callable[[str], bool]

# A \uD800-\uDFFF escape, if its backslash is not itself escaped (check_text counts the
# backslashes before it). Searched for by its two first characters, a literal: a regex
# scans 250 MB for them in well under a second, where `in` took a fifth of one on its own.
_SURROGATE_ESCAPE = re.compile(r"\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode("ascii"))


class ResultsRefused(InputError):
    """Results that parse but may not be used: a number out of range, an unsafe string."""


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


class _Checker:
    def __init__(self, display: str, *, turns: bool = True):
        self.display = display
        self.keep_turns = turns  # False: fingerprinted runs' turns are let go unread

    def refuse(self, where: str, why: str) -> ResultsRefused:
        return ResultsRefused(one_line(f"refused Results: {where}: {why}"), self.display)

    def number(self, value: float | None, where: str, *, unit: bool = False) -> None:
        if value is None:
            return
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            raise self.refuse(where, f"{_show(value)} is not a finite number of sensible size")
        if unit and not 0.0 <= value <= 1.0:
            raise self.refuse(where, f"{_show(value)} is outside [0, 1], this metric's range")

    def count(self, value: int | None, where: str, *, most: int = MAX_COUNT) -> None:
        if value is not None and not 0 <= value <= most:
            raise self.refuse(where, f"{_show(value)} is not a count within 0..{most}")

    def text(self, value: str | None, where: str, *, most: int = MAX_ID_CHARS) -> None:
        if value is None:
            return
        if len(value) > most:
            raise self.refuse(where, f"{len(value)} characters, more than {most}")
        bad = _UNSAFE.search(value)
        if bad is not None:
            raise self.refuse(where, f"{_show(value)} has the control character {bad.group()!r}")

    def free(self, value: str | None, where: str, *, most: int) -> None:
        """A string shown as text but also used as a value (a command): no NUL, bounded."""
        if value is None:
            return
        if len(value) > most:
            raise self.refuse(where, f"{len(value)} characters, more than {most}")
        if "\x00" in value:
            raise self.refuse(where, "has a NUL character")

    def data(self, value: Any, where: str) -> None:
        """JSON of any shape (criteria, a generation config): its numbers finite."""
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                raise self.refuse(where, f"{_show(item)} is not a finite number")
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list | tuple):
                stack.extend(item)

    def names(self, keys: Iterable[str], where: str) -> None:
        for key in keys:
            self.text(key, f"{where} name")

    def results(self, results: Results) -> None:
        self.text(results.tool_version, "tool_version")
        self.text(results.adk_version, "adk_version")
        source = results.source
        for name in ("repo", "sha", "ref", "run_id", "event"):
            self.text(getattr(source, name), f"source.{name}")
        config = results.run_config
        self.free(config.target, "run_config.target", most=MAX_TARGET_CHARS)
        self.count(config.num_runs, "run_config.num_runs")
        self.count(config.concurrency, "run_config.concurrency")
        self.number(config.timeout_s, "run_config.timeout_s")
        self.text(config.judge_model, "run_config.judge_model")
        self.run_inputs(results)
        if results.shard is not None:
            shard = results.shard
            self.count(shard.count, "shard.count", most=MAX_SHARDS)
            self.count(shard.index, "shard.index", most=shard.count)
            self.count(shard.cases_total, "shard.cases_total")
            self.count(shard.cases_compared, "shard.cases_compared", most=shard.cases_total)
            self.text(shard.partition_hash, "shard.partition_hash")
            self.text(shard.baseline_sha, "shard.baseline_sha")
        for i, entry in enumerate(results.eval_sets):
            where = f"eval_sets[{i}]"
            self.text(entry.eval_set_id, f"{where}.eval_set_id")
            self.text(entry.file, f"{where}.file", most=MAX_PATH_CHARS)
            self.text(entry.file_sha256, f"{where}.file_sha256")
            self.text(entry.config, f"{where}.config", most=MAX_PATH_CHARS)
            self.names(entry.criteria, f"{where}.criteria")
            self.data(entry.criteria, f"{where}.criteria")
        self.usage(results.usage, "usage")
        self.number(results.timing.duration_s, "timing.duration_s")
        for i, case in enumerate(results.cases):
            if not _case_is_sane(case, turns=self.keep_turns):  # then say what is wrong
                self.case(case, f"cases[{i}]")

    def run_inputs(self, results: Results) -> None:
        """The selection and the gate's policy a run records (shown in the report's notes)."""
        config = results.run_config
        if config.selection is not None:
            where = "run_config.selection"
            for i, selected in enumerate(config.selection.paths):
                self.text(selected.path, f"{where}.paths[{i}].path", most=MAX_PATH_CHARS)
                for eval_id in selected.ids or ():
                    self.text(eval_id, f"{where}.paths[{i}].ids")
            for eval_set_id, ids in config.selection.unselected.items():
                self.text(eval_set_id, f"{where}.unselected")
                for eval_id in ids:
                    self.text(eval_id, f"{where}.unselected[{eval_set_id!r}]")
        if config.gate is not None:
            for token in config.gate.fail_on:
                self.text(token, "run_config.gate.fail_on")
            for value in config.gate.min_delta.values():
                self.number(value, "run_config.gate.min_delta")
        self.names(config.budgets, "run_config.budgets")
        for value in config.budgets.values():
            self.number(value, "run_config.budgets")

    def usage(self, usage: Any, where: str) -> None:
        for name in USAGE_COUNTS:
            self.count(getattr(usage, name), f"{where}.{name}")
        self.number(usage.cost_usd, f"{where}.cost_usd")

    def case(self, case: CaseResult, where: str) -> None:
        self.text(case.eval_set_id, f"{where}.eval_set_id")
        self.text(case.eval_id, f"{where}.eval_id")
        # from here on the case is named by its ids, which are known to be printable
        where = f'case "{case.key.name}"'
        self.text(case.file, f"{where}: file", most=MAX_PATH_CHARS)
        self.count(case.line, f"{where}: line")
        self.text(case.case_sha256, f"{where}: case_sha256")
        self.text(case.content_sha256, f"{where}: content_sha256")
        self.number(case.duration_s, f"{where}: duration_s")
        self.usage(case.usage, f"{where}: usage")
        self.names(case.metrics, f"{where}: metric")
        for name, metric in case.metrics.items():
            self.metric(metric, f"{where}: {name}")
        self.names(case.efficiency, f"{where}: efficiency")
        for name, result in case.efficiency.items():
            at = f"{where}: efficiency {name}"
            for value in (result.score, result.total, result.budget, *result.runs):
                self.number(value, at)
            for turns in result.invocations:
                for value in turns:
                    self.number(value, at)
        for run in case.runs:
            self.count(run.run, f"{where}: run")
            self.number(run.duration_s, f"{where}: run {run.run} duration_s")
            self.text(run.fingerprint, f"{where}: run {run.run} fingerprint")
            for name, value in _tool_counts(run):
                self.count(value, f"{where}: run {run.run} tools.{name}")
            for turn in self.turns(run, f"{where}: run {run.run}"):
                self.number(turn.duration_s, f"{where}: run {run.run} turn duration_s")

    def turns(self, run: RunRecord, where: str) -> list[InvocationRecord]:
        """A run's turns, their types checked (a Results read from a file keeps them as
        JSON: decoded here, and let go again, the JSON made compact: RunRecord.settle).
        Without `keep_turns`, a run whose fingerprint is recorded loses its turns unread."""
        try:
            return run.settle(keep=self.keep_turns)
        except msgspec.ValidationError as err:
            raise InputError(
                one_line(f"invalid Results: {where} invocations: {err}"), self.display
            ) from None

    def scores(self, metric: MetricResult, where: str, *, unit: bool = False) -> None:
        self.number(metric.score, f"{where}.score", unit=unit)
        for value in metric.runs:
            self.number(value, f"{where}.runs", unit=unit)
        for turns in metric.invocations:
            for value in turns:
                self.number(value, f"{where}.invocations", unit=unit)

    def metric(self, metric: MetricResult, where: str) -> None:
        self.scores(metric, where)
        self.number(metric.threshold, f"{where}.threshold")
        judge = metric.judge
        if judge is None:
            return
        for name in ("model", "prompt_version", "parser_version"):
            self.text(getattr(judge, name), f"{where}.judge.{name}")
        self.count(judge.num_samples, f"{where}.judge.num_samples")
        self.data(judge.generation_config, f"{where}.judge.generation_config")
        for scores in judge.rubric_scores:
            for value in scores.values():
                self.number(value, f"{where}.judge.rubric_scores")
        for verdict in judge.verdicts:
            self.text(verdict.key, f"{where}.judge.verdicts.key")
            self.text(verdict.request, f"{where}.judge.verdicts.request")
            self.count(verdict.run, f"{where}.judge.verdicts.run")
            self.count(verdict.turn, f"{where}.judge.verdicts.turn")
            self.count(verdict.step, f"{where}.judge.verdicts.step")
            self.number(verdict.score, f"{where}.judge.verdicts.score")


def _numbers_sane(values: Iterable[float | None]) -> bool:
    """Each None, or finite and at most MAX_MAGNITUDE in size (NaN compares false)."""
    return all(v is None or -MAX_MAGNITUDE <= v <= MAX_MAGNITUDE for v in values)


def _counts_sane(values: Iterable[int | None]) -> bool:
    return all(v is None or 0 <= v <= MAX_COUNT for v in values)


def _tool_counts(run: RunRecord) -> list[tuple[str, int]]:
    """A run's hermetic-tools counts (none without them), which the agent stage reports."""
    tools = run.tools
    if tools is None:
        return []
    return [
        ("from_eval_file", tools.from_eval_file),
        ("from_recording", tools.from_recording),
        ("live", tools.live),
    ]


def _case_is_sane(case: CaseResult, *, turns: bool = True) -> bool:
    """_Checker.case's checks without their messages, each turn's types checked too (with
    `turns` False, a run whose fingerprint is recorded loses its turns unread): one pass
    over a sane case (nearly every case), the checker's only over one that is not."""
    ids = (case.eval_set_id, case.eval_id, case.case_sha256, case.content_sha256 or "")
    if max(map(len, ids)) > MAX_ID_CHARS or len(case.file) > MAX_PATH_CHARS:
        return False
    if any(len(name) > MAX_ID_CHARS for name in (*case.metrics, *case.efficiency)):
        return False
    if _UNSAFE.search("".join((*ids, case.file, *case.metrics, *case.efficiency))) is not None:
        return False
    usage = case.usage
    if not _counts_sane(getattr(usage, name) for name in USAGE_COUNTS):
        return False
    numbers = [case.duration_s, usage.cost_usd]
    counts = [case.line]
    for metric in case.metrics.values():
        if metric.judge is not None:
            return False  # rare enough to be checked the long way
        numbers += (metric.threshold, *_scores(metric))
    for result in case.efficiency.values():
        numbers += (result.score, result.total, result.budget, *result.runs)
        for per_turn in result.invocations:
            numbers += per_turn
    for run in case.runs:
        counts.append(run.run)
        counts += (value for _, value in _tool_counts(run))
        numbers.append(run.duration_s)
        fingerprint = run.fingerprint or ""
        if len(fingerprint) > MAX_ID_CHARS or _UNSAFE.search(fingerprint) is not None:
            return False
        try:
            numbers += (turn.duration_s for turn in run.settle(keep=turns))
        except msgspec.ValidationError:
            return False
    return _numbers_sane(numbers) and _counts_sane(counts)


def check_id(value: str | None, where: str, display: str) -> None:
    """Raise ResultsRefused unless `value` (None: nothing) is a sane id: bounded, with no
    control or direction character (the checks of every id in Results)."""
    _Checker(display).text(value, where)


def check_text(text: str | Buffer, display: str) -> None:
    """Raise ResultsRefused when the JSON text (or its UTF-8 bytes, read or mapped) escapes a lone
    surrogate: a high half not followed by a low one, or a low half on its own. (Raw
    surrogates cannot get this far: the file is read as strict UTF-8.)"""
    pattern = _SURROGATE_ESCAPE if isinstance(text, str) else _SURROGATE_ESCAPE_BYTES
    backslash, newline = ("\\", "\n") if isinstance(text, str) else (b"\\", b"\n")
    paired_up_to = -1  # where the last pair's low half ends
    for match in pattern.finditer(text):  # type: ignore[arg-type]
        at = match.start()
        if at < paired_up_to:
            continue  # the low half of a pair
        before = at  # a run of backslashes before it: an odd one escapes this one
        while before and text[before - 1 : before] == backslash:
            before -= 1
        if (at - before) % 2:
            continue  # an escaped backslash, then the text "u..."
        half = int(match.group(1), 16)
        after = pattern.match(text, match.end())  # type: ignore[arg-type]
        if half < 0xDC00 and after is not None and int(after.group(1), 16) >= 0xDC00:
            paired_up_to = after.end()
            continue
        before_it = text[:at] if isinstance(text, str) else bytes(text[:at])
        line = before_it.count(newline) + 1  # type: ignore[arg-type]
        digits = match.group(1)
        digits = digits if isinstance(digits, str) else digits.decode("ascii")
        raise ResultsRefused(
            f"refused Results: line {line}: \\u{digits} is half of a UTF-16 pair, not a character",
            display,
        )


def check_results(results: Results, display: str, *, turns: bool = True) -> None:
    """Raise ResultsRefused (one line naming `display` and the place) unless the Results
    are sane as the module's docstring says. `turns` False: Results read for main's record
    only (an older baseline), whose runs' fingerprints say what they did: a run that has
    one loses its turns unread, so nothing is kept of them and nothing reads them."""
    _Checker(display, turns=turns).results(results)


def check_bounded(results: Results, display: str, bounded: Bounded) -> None:
    """Raise ResultsRefused unless every score of each metric that `bounded(name)` says
    scores within [0, 1] is within it (run after check_results)."""
    checker = _Checker(display)
    known: dict[str, bool] = {}  # metric name -> bounded
    for case in results.cases:
        for name, metric in case.metrics.items():
            if name not in known:
                known[name] = bounded(name)
            if known[name] and not _within_unit(metric):  # then say where, the long way
                where = f'case "{case.key.name}"'
                checker.scores(metric, f"{where}: {name}", unit=True)


def _scores(metric: MetricResult) -> list[float | None]:
    """Every score of the metric: overall, per run, per turn."""
    values = [metric.score, *metric.runs]
    for turns in metric.invocations:
        values += turns
    return values


def _within_unit(metric: MetricResult) -> bool:
    """Whether every score of the metric is None or in [0, 1] (NaN compares false)."""
    return all(v is None or 0.0 <= v <= 1.0 for v in _scores(metric))
