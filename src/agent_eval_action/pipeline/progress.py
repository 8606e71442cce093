"""Live progress of a run on stderr, in the form that suits where it is shown.

- A terminal: one line rewritten in place (case-runs done/total, passed, failed,
  errored so far, elapsed, ETA); errored case-runs are also printed above it.
- GitHub Actions (GITHUB_ACTIONS=true): a collapsed `::group::` holding one progress
  record every few seconds, and a line per errored case-run.
- Anything else (a log file, a pipe): one line per finished case-run.

"passed"/"failed" so far are provisional. Each case-run is scored alone, as the score
stage scores a case, with the metrics that decide a case's status (`Metric.decides`) and
need no judge: the deterministic built-in ones, and custom ones (the agent stage scored
them on the trace). One of them failing is "FAILED"; "passed" needs every metric that
decides, so a case-run whose LLM-judged metrics are still to be asked is neither. The
verdict is the results table printed at the end, which pools a case's runs (one run's
verdict here is its own). That scoring happens on a thread of its own, never in the event
loop the agents run in (the first ROUGE score imports NLTK, which takes seconds).
"""

from __future__ import annotations

import math
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, TextIO

from ..results import Status

if TYPE_CHECKING:
    from ..traces import CaseRunTrace
    from .plan import Plan

Mode = Literal["tty", "actions", "lines"]
Verdict = Callable[["CaseRunTrace"], Status | None]
TTY_REFRESH_S = 0.5
ACTIONS_INTERVAL_S = 5.0


def progress_mode(stream: TextIO, environ: Mapping[str, str]) -> Mode:
    if environ.get("AGENT_EVAL_PROGRESS") == "lines":  # the action relays this output as text
        return "lines"
    if environ.get("GITHUB_ACTIONS") == "true":
        return "actions"
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty() and environ.get("TERM") != "dumb":
        return "tty"
    return "lines"


def quick_verdict(plan: Plan) -> Verdict:
    """Score one finished case-run alone with the metrics that decide and need no judge;
    None (neither passed nor failed) while a judged one is still to be asked (see above)."""
    from .score import score_case

    cases = plan.cases

    def verdict(trace: CaseRunTrace) -> Status | None:
        if trace.error is not None:
            return Status.ERRORED
        eval_set, case = cases[trace.key]
        deciding = {n: m for n, m in plan.metrics[eval_set.eval_set_id].items() if m.decides}
        now = {name: metric for name, metric in deciding.items() if not metric.judged}
        criteria = plan.criteria[eval_set.eval_set_id]
        status = score_case(eval_set, case, now, criteria, [trace]).status
        if status == Status.PASSED and len(now) < len(deciding):
            return None  # the judge has still to say
        return status

    return verdict


def _clock_text(seconds: float) -> str:
    seconds = max(0, math.ceil(seconds))
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


class Progress:
    """Counts finished case-runs and shows them; use as a context manager around the run."""

    def __init__(
        self,
        total: int,
        *,
        verdict: Verdict | None = None,
        stream: TextIO | None = None,
        mode: Mode | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        import os

        self.total = total
        self.stream = stream or sys.stderr
        self.mode: Mode = mode or progress_mode(self.stream, environ or os.environ)
        self.interval = interval or (TTY_REFRESH_S if self.mode == "tty" else ACTIONS_INTERVAL_S)
        self._verdict = verdict
        self._clock = clock
        self._started = clock()
        self.done = 0
        self.counts = {Status.PASSED: 0, Status.FAILED: 0, Status.ERRORED: 0}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._pending: queue.Queue[CaseRunTrace | None] = queue.Queue()
        self._scorer: threading.Thread | None = None

    def __enter__(self) -> Progress:
        self._started = self._clock()
        if self.mode == "actions":
            self._write(f"::group::agent-eval-action: running {self._runs(self.total)}\n")
        if self.mode in ("tty", "actions") and self.total:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        self._scorer = threading.Thread(target=self._score, name="progress-scorer", daemon=True)
        self._scorer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._scorer is not None:
            self._pending.put(None)
            self._scorer.join()
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.mode == "tty":
                self._write(f"\r\x1b[K{self.status_line()}\n")
            elif self.mode == "actions":
                self._write(f"{self.status_line()}\n::endgroup::\n")

    def on_trace(self, trace: CaseRunTrace) -> None:
        """Record a finished case-run; it is scored and shown on the scorer thread."""
        if self._scorer is None:
            self._show(trace)
        else:
            self._pending.put(trace)

    def wait(self) -> None:
        """Until every case-run recorded so far is shown."""
        self._pending.join()

    def _score(self) -> None:
        while (trace := self._pending.get()) is not None:
            try:
                self._show(trace)
            finally:
                self._pending.task_done()
        self._pending.task_done()

    def _show(self, trace: CaseRunTrace) -> None:
        try:
            verdict = self._verdict(trace) if self._verdict else None
        except Exception:  # a provisional verdict must never stop the run
            verdict = None
        if trace.error is not None:
            verdict = Status.ERRORED
        with self._lock:
            self.done += 1
            if verdict in self.counts:
                self.counts[verdict] += 1
            line = self._case_line(trace, verdict)
            if self.mode == "lines" or (self.mode == "actions" and verdict == Status.ERRORED):
                self._write(f"{line}\n")
            elif self.mode == "tty":
                above = f"{line}\n" if verdict == Status.ERRORED else ""
                self._write(f"\r\x1b[K{above}{self.status_line()}")

    def status_line(self) -> str:
        elapsed = self._clock() - self._started
        parts = [f"{self.done}/{self._runs(self.total)}"]
        parts += [f"{count} {status.value}" for status, count in self.counts.items()]
        parts.append(f"{_clock_text(elapsed)} elapsed")
        if self.done < self.total:
            eta = elapsed / self.done * (self.total - self.done) if self.done else None
            parts.append(f"ETA {_clock_text(eta)}" if eta is not None else "ETA --")
        return "progress: " + ", ".join(parts)

    @staticmethod
    def _runs(count: int) -> str:
        return f"{count} case-run{'s' if count != 1 else ''}"

    @staticmethod
    def _case_line(trace: CaseRunTrace, verdict: Status | None) -> str:
        name = f"  {trace.run_key}"
        if trace.error is not None:
            return f"{name}: ERROR: {trace.error} ({trace.duration_s:.1f}s)"
        mark = {Status.PASSED: ", passed", Status.FAILED: ", FAILED"}.get(verdict, "")  # type: ignore[arg-type]
        return f"{name}: ok{mark} ({trace.duration_s:.1f}s)"

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self.mode == "tty":
                    self._write(f"\r\x1b[K{self.status_line()}")
                else:
                    self._write(f"{self.status_line()}\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not stop the run
            pass
