"""ADK's log records, kept with the case-run that logged them (the in-process runner).

A tool that raises makes ADK log the same long traceback two or three times; with many
case-runs at once, stderr fills with ADK's internals before the one-line summary. While
`routed()` is on (the agent stage), a handler on ADK's loggers takes each record logged
inside a case-run (`case()`, a context variable: case-runs share one event loop and each
task inherits its case-run's context) and keeps its text, capped, for the case-run's trace;
stderr gets one line per error instead, e.g.

    s / refund run 1: tool 'refund' raised ValueError: no such order (agent/tools.py:12)

A record logged outside every case-run (loading the agent, a thread of ADK's own) goes
where it went before: to the handlers above ADK's loggers, Python's last resort when there
are none.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import logging
import sys
import threading
import traceback
from collections.abc import Callable, Iterator

LOGGERS = ("google_adk", "google.adk")  # ADK's module loggers, and any under its package name
LOG_CHARS = 16_000  # of a case-run's log kept: the head, what was left out, and the tail
HEAD_CHARS = 4_000  # of those, from the start (the first traceback's top)
_GAP_CHARS = 64  # kept for the line that says how much was left out
LINE_CHARS = 200  # of the one line an error gets on stderr

Describe = Callable[[BaseException], str]


class CaseLog:
    """What ADK logged during one case-run, and which errors were said on stderr."""

    def __init__(self, label: str, describe: Describe) -> None:
        self.label = label  # "s / refund run 1"
        self.closed = False
        self._describe = describe
        self._head: list[str] = []  # the records' texts up to HEAD_CHARS, then ...
        self._tail: collections.deque[str] = collections.deque()  # ... the latest ones
        self._chars = [0, 0, 0]  # in the head, in the tail, in all
        self._seen: set[int] = set()  # exceptions written out in full (by id)
        self._said: set[str] = set()  # errors said on stderr
        self._tools: dict[int, str] = {}  # exception (by id) -> the tool that raised it
        self._kept: list[BaseException] = []  # keeps the ids above from being reused

    def tool_raised(self, tool: str, error: BaseException) -> None:
        self._tools[id(error)] = tool
        self._kept.append(error)

    def add(self, record: logging.LogRecord) -> str | None:
        """Keep the record; the line to say on stderr when it is an error not said yet."""
        error = record.exc_info[1] if record.exc_info else None
        head = f"{record.levelname} {record.name}: {record.getMessage()}"
        if error is None:
            self._keep(head)
        elif id(error) in self._seen:  # ADK logs one exception at each level it passes
            self._keep(f"{head} ({type(error).__name__}, as above)")
        else:
            self._seen.add(id(error))
            self._kept.append(error)
            self._keep(head + "\n" + "".join(traceback.format_exception(error)).rstrip())
        if record.levelno < logging.ERROR:
            return None
        said = self._said_of(record, error)
        if said in self._said:
            return None
        self._said.add(said)
        line = f"  {self.label}: {said}"
        return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"

    def _said_of(self, record: logging.LogRecord, error: BaseException | None) -> str:
        if error is None:
            return "ADK logged an error: " + record.getMessage().strip().split("\n", 1)[0]
        tool = self._tools.get(id(error))
        described = self._describe(error)
        return f"tool {tool!r} raised {described}" if tool else f"ADK logged {described}"

    def _keep(self, part: str) -> None:
        """One record's text: in the head while it has room, else in the tail, whose
        oldest texts go once it holds more than LOG_CHARS (a chatty run's memory is bounded)."""
        size = len(part) + 1  # and its line break
        self._chars[2] += size
        if self._chars[0] < HEAD_CHARS and not self._tail:
            self._head.append(part)
            self._chars[0] += size
            return
        self._tail.append(part)
        self._chars[1] += size
        while self._chars[1] - len(self._tail[0]) - 1 > LOG_CHARS:
            self._chars[1] -= len(self._tail.popleft()) + 1

    def text(self) -> str | None:
        """The case-run's log, at most LOG_CHARS characters: the first HEAD_CHARS, how
        many were left out, and the last; None when nothing was logged."""
        if not self._head:
            return None
        head, tail = "\n".join(self._head), "\n".join(self._tail)
        text = head + "\n" + tail if tail else head
        if self._chars[2] - 1 <= LOG_CHARS:
            return text
        last = text[-(LOG_CHARS - HEAD_CHARS - _GAP_CHARS) :]  # within the tail kept
        left = self._chars[2] - 1 - HEAD_CHARS - len(last)
        return f"{text[:HEAD_CHARS]}\n… ({left:,} characters left out) …\n{last}"


_CURRENT: contextvars.ContextVar[CaseLog | None] = contextvars.ContextVar(
    "agent_eval_action_case_log", default=None
)


def current() -> CaseLog | None:
    """The log of the case-run this code runs in, if any."""
    log = _CURRENT.get()
    return None if log is None or log.closed else log


class _Router(logging.Handler):
    """On one of ADK's loggers (which then stops propagating): a record inside a case-run
    goes to its log, any other on to the loggers above, as if it had propagated."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger = logger

    def emit(self, record: logging.LogRecord) -> None:
        log = current()
        if log is None:
            if self.logger.parent is not None:
                self.logger.parent.handle(record)
            return
        try:
            line = log.add(record)
            if line is not None:
                stream = sys.stderr
                clear = "\r\x1b[K" if getattr(stream, "isatty", lambda: False)() else ""
                stream.write(f"{clear}{line}\n")  # above a live progress line, on a terminal
                stream.flush()
        except Exception:
            self.handleError(record)  # as any handler: said on stderr, the run goes on


_LOCK = threading.Lock()
_USERS = 0
_INSTALLED: list[tuple[logging.Logger, _Router, bool]] = []


@contextlib.contextmanager
def routed() -> Iterator[None]:
    """ADK's records routed per case-run while this is on (nested and concurrent uses
    share one installation)."""
    global _USERS
    with _LOCK:
        if _USERS == 0:
            for name in LOGGERS:
                logger = logging.getLogger(name)
                router = _Router(logger)
                _INSTALLED.append((logger, router, logger.propagate))
                logger.addHandler(router)
                logger.propagate = False
        _USERS += 1
    try:
        yield
    finally:
        with _LOCK:
            _USERS -= 1
            if _USERS == 0:
                for logger, router, propagate in _INSTALLED:
                    logger.removeHandler(router)
                    logger.propagate = propagate
                _INSTALLED.clear()


@contextlib.contextmanager
def case(label: str, describe: Describe) -> Iterator[CaseLog]:
    """One case-run's log: what ADK logs in this context (and the tasks it starts) goes
    there. `describe` says an exception in one line."""
    log = CaseLog(label, describe)
    token = _CURRENT.set(log)
    try:
        yield log
    finally:
        log.closed = True  # a task of ADK's that outlives the case-run logs as outside it
        _CURRENT.reset(token)
