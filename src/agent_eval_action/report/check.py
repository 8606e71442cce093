"""The check run's output and the annotations, for the Checks API or as workflow commands.

Pure functions: the action sends `check_output_of(report)` with `annotation_batches` (the API
takes at most 50 annotations per request and appends them on each update), or prints
`workflow_commands(...)` when it cannot write checks (a fork's read-only token). The runner
keeps only 10 annotations of each level per step, so the most important come first and
the tenth says how many more there are.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from ..compare.model import REGRESSIONS, CaseDiff, Change, Diff, TurnDiff
from ..core import AXES, Axis
from ..results import Results, Status
from . import markdown
from .escape import truncate
from .model import Report, gate_counts_failing

MAX_ANNOTATIONS_PER_REQUEST = 50
MAX_COMMANDS_PER_LEVEL = 10  # what the runner keeps per level and step
MESSAGE_CHARS = 4_000  # the runner cuts messages at 4,096; the API allows 64 KB
TITLE_CHARS = 255
ANSWER_CHARS = 1_000  # per answer in a message: expected, baseline and current fit

Level = Literal["failure", "warning", "notice"]


@dataclass
class CheckOutput:
    title: str
    summary: str  # <= 65,535 bytes
    text: str  # <= 65,535 bytes
    annotations: list[dict[str, Any]] = field(default_factory=list)

    def batches(self) -> list[list[dict[str, Any]]]:
        return annotation_batches(self.annotations)


def _name(case: CaseDiff) -> str:
    return case.key.name


def _rank(case: CaseDiff) -> tuple[int, int]:
    """Regressions first (new failures before drops, trajectory before response)."""
    axes = [case.axes.get("trajectory"), case.axes.get("response")]
    worst = min(
        (0 if a == Change.NEW_FAILURE else 1 if a in REGRESSIONS else 2 for a in axes), default=2
    )
    return worst, 0 if axes[0] in REGRESSIONS else 1


def _regression_message(case: CaseDiff) -> tuple[str, str]:
    axes: list[Axis] = [a for a in AXES if case.axes.get(a) in REGRESSIONS]
    title = f"{' and '.join(axes).capitalize()} regression: {_name(case)}"
    lines = [f"{_name(case)}: {markdown.case_class(case)}"]
    for metric in case.metrics:
        if metric.change in REGRESSIONS:
            lines.append(
                f"{metric.metric}: {markdown.score(metric.baseline_score)} -> "
                f"{markdown.score(metric.current_score)} ({metric.reason})"
            )
    if case.divergence is not None:
        lines += _turn_lines(case.divergence, axes)
    return title, "\n".join(lines)


def _turn_lines(turn: TurnDiff, axes: Collection[Axis]) -> list[str]:
    """The first divergent turn on these axes: the tool calls for the trajectory, the
    answers for the response (expected, the baseline's when there is one, current)."""
    lines = [
        f"first divergent turn: {turn.turn + 1}" + (" (simulated user)" if turn.simulated else "")
    ]
    if turn.baseline_user_text is not None:
        lines.append(_answer("baseline's user: ", turn.baseline_user_text))
    if turn.simulated:
        lines.append(_answer("user:            ", turn.user_text))
    if "trajectory" in axes:
        if not turn.simulated:
            lines.append(f"  expected tool calls: {', '.join(turn.expected_calls) or '(none)'}")
        if turn.baseline_calls is not None:
            lines.append(f"  baseline tool calls: {', '.join(turn.baseline_calls) or '(none)'}")
        lines.append(f"  current tool calls:  {', '.join(turn.current_calls) or '(none)'}")
    if "response" in axes:
        if not turn.simulated:
            lines.append(_answer("expected answer: ", turn.expected_answer))
        if turn.baseline_calls is not None:
            lines.append(_answer("baseline answer: ", turn.baseline_answer))
        lines.append(_answer("current answer:  ", turn.current_answer))
    return lines


def _answer(label: str, text: str | None) -> str:
    """An answer, shortened, its later lines indented under its first."""
    if text is None:
        return f"  {label}(no answer)"
    indent = "\n  " + " " * len(label)
    return f"  {label}" + indent.join(truncate(text, ANSWER_CHARS).splitlines() or [""])


def _threshold_message(case: CaseDiff) -> tuple[str, str]:
    """A failing case that the gate counts: no baseline, or `fail-on: threshold`."""
    lines = [f"{_name(case)} does not pass its thresholds"]
    lines += _failed_metrics(case)
    lines += _why_failing(case)
    return f"Fails its thresholds: {_name(case)}", "\n".join(lines)


def _failed_metrics(case: CaseDiff) -> list[str]:
    return [
        f"{metric.metric}: {markdown.score(metric.current_score)} < {markdown.score(metric.threshold)}"
        for metric in case.metrics
        if metric.current_status == Status.FAILED
    ]


def _why_failing(case: CaseDiff) -> list[str]:
    """Where the failing case departs from its eval file, on the axes it fails."""
    if case.divergence is None:
        return []
    axes = {m.axis for m in case.metrics if m.current_status == Status.FAILED}
    return _turn_lines(case.divergence, axes)


def _failing_message(case: CaseDiff) -> tuple[str, str]:
    lines = [f"{_name(case)} fails on the baseline too (not blamed on this change)"]
    lines += _failed_metrics(case)
    lines += _why_failing(case)
    return f"Still failing: {_name(case)}", "\n".join(lines)


def case_annotations(diff: Diff) -> list[dict[str, Any]]:
    """Checks API annotations at each case's eval file and line: failures for regressions,
    warnings for cases still failing (failures for every case that fails when the gate
    counts them: no baseline, or `fail-on: threshold`); the most important first."""
    regressed = sorted(
        (c for c in diff.cases if any(a in REGRESSIONS for a in c.axes.values())), key=_rank
    )
    counted = gate_counts_failing(diff)
    blamed = {id(c) for c in regressed}  # by identity: `in` a list compared whole records
    failing = [
        c
        for c in diff.cases
        if (c.current_status == Status.FAILED if counted else c.change == Change.STILL_FAILING)
        and id(c) not in blamed
    ]
    out = []
    for level, cases, message in (
        ("failure", regressed, _regression_message),
        ("failure", failing, _threshold_message)
        if counted
        else ("warning", failing, _failing_message),
    ):
        for case in cases:
            title, text = message(case)
            out.append(
                {
                    "path": case.file,
                    "start_line": max(1, case.line),
                    "end_line": max(1, case.line),
                    "annotation_level": level,
                    "message": truncate(text, MESSAGE_CHARS),
                    "title": truncate(title, TITLE_CHARS - 40),
                }
            )
    return out


def annotation_batches(
    items: list[dict[str, Any]], size: int = MAX_ANNOTATIONS_PER_REQUEST
) -> list[list[dict[str, Any]]]:
    """At most `size` per request: the first creates the check run, later ones update it."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def check_output(
    diff: Diff, current: Results, options: markdown.Options | None = None
) -> CheckOutput:
    return check_output_of(Report.of(diff, current, options or markdown.Options()))


def check_output_of(report: Report) -> CheckOutput:
    """check_output from the Report the action renders its other reports from."""
    summary, text = markdown.check_parts_of(report)
    return CheckOutput(
        title=truncate(markdown.headline(report.diff, report.current), 200),
        summary=summary,
        text=text,
        annotations=case_annotations(report.diff),
    )


# ---- workflow commands (the fallback without checks: write) -------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped, as the runner unescapes them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


_COMMAND = {"failure": "error", "warning": "warning", "notice": "notice"}


def workflow_command(annotation: dict[str, Any]) -> str:
    level = _COMMAND[annotation["annotation_level"]]
    properties = []
    if annotation.get("path"):
        properties.append(f"file={escape_property(annotation['path'])}")
        properties.append(f"line={int(annotation['start_line'])}")
        if annotation.get("end_line", annotation["start_line"]) != annotation["start_line"]:
            properties.append(f"endLine={int(annotation['end_line'])}")
    if annotation.get("title"):
        properties.append(f"title={escape_property(annotation['title'])}")
    head = f"::{level} {','.join(properties)}" if properties else f"::{level}"
    return f"{head}::{escape_data(annotation['message'])}"


def workflow_commands(diff: Diff, per_level: int = MAX_COMMANDS_PER_LEVEL) -> list[str]:
    """`::error file=…,line=…,title=…::message` lines, at most `per_level` of each level
    (the runner drops the rest): the most important first, and when there are more, the
    last line of a level says how many were left out."""
    by_level: dict[str, list[dict[str, Any]]] = {}
    for annotation in case_annotations(diff):
        by_level.setdefault(annotation["annotation_level"], []).append(annotation)
    lines = []
    for level, items in by_level.items():
        shown = items if len(items) <= per_level else items[: per_level - 1]
        lines += [workflow_command(a) for a in shown]
        left = len(items) - len(shown)
        if left:
            what = "regressions" if level == "failure" else "cases still failing"
            lines.append(
                workflow_command(
                    {
                        "annotation_level": level,
                        "title": f"{left} more {what}",
                        "message": f"{left} more {what} are not annotated here "
                        "(the runner keeps 10 per level); see the job summary.",
                    }
                )
            )
    return lines
