"""`agent-eval-action action`: the GitHub Action's entry point (docs/action.md).

Settings are parsed once from INPUT_* and GITHUB_*, the event picks the mode, and each mode
wires the stages: baseline first (its judge verdicts and durations are reused), then the
eval run in a child process with no token, then compare, then publish. `mode: comment`
never runs or imports project code: it reads a finished PR run's artifact.

Exit codes as the CLI's: 0 pass (and: the baseline was recorded), 1 gate failed, 2 bad
input, 3 no verdict: infrastructure failure, cancellation (partial results are kept), or a
fault of the action itself (an unexpected exception: its traceback in the log, one error
line, never the gate's exit 1).
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path

from ..errors import (
    EXIT_BAD_INPUT,
    EXIT_INFRASTRUCTURE,
    InfrastructureError,
    InputError,
    disk_full_line,
    fault_line,
)
from ..files import BENEATH_ENV, read_beneath
from ..github.client import GitHub, GitHubError
from ..github.env import GitHubEnv
from ..report import escape, render
from . import outputs
from .children import Cancelled, Children
from .context import Context
from .event import load_event, select_mode
from .modes import MODES
from .settings import parse_settings
from .workdirs import OutputDir, Workdirs

MODEL_KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")  # the agent's and the judge's: masked in logs


def main(env: Mapping[str, str] | None = None) -> int:
    environ = os.environ if env is None else env
    children = Children()
    children.install()
    render.preload()  # before any of the PR's code runs (docs/security.md)
    try:
        settings = parse_settings(environ)
        keys = (
            settings.github_token,
            settings.judge_api_key,
            *(environ.get(k) for k in MODEL_KEYS),
        )
        for secret in keys:
            if secret:
                outputs.mask(secret)
        for note in settings.deprecated:
            outputs.command("warning", note)
        event = load_event(settings.github.event_name, settings.github.event_path)
        mode = select_mode(settings, event)
        gh = (
            GitHub(settings.github_token, settings.github.api_url)
            if settings.github_token
            else None
        )
        workspace = Path(settings.github.workspace or os.getcwd())
        # the checkout is the PR's: no file in it is read through a link, here or in a child
        read_beneath(workspace)
        os.environ[BENEATH_ENV] = str(workspace)
        output_dir = OutputDir.open(settings.output_dir, workspace)
        dirs = Workdirs.make()
        try:
            context = Context(settings, event, gh, dirs, output_dir.path, children)
            print(
                f"agent-eval-action: {mode.value} mode for the {settings.github.event_name} event"
            )
            return MODES[mode](context)
        finally:
            try:  # whatever the run wrote, whole, even when it stopped on a fault
                output_dir.publish(dirs.run)
            finally:
                output_dir.close()
                dirs.remove()
    except InputError as err:
        return _fail(EXIT_BAD_INPUT, str(err), environ)
    except Cancelled:
        message = "cancelled (SIGTERM/SIGINT); what was written is kept"
        return _fail(EXIT_INFRASTRUCTURE, message, environ)
    except (InfrastructureError, GitHubError) as err:
        return _fail(EXIT_INFRASTRUCTURE, str(err), environ)
    except Exception as err:  # a fault of this tool or its machine: no verdict, never exit 1
        if full := disk_full_line(err):  # the machine's, not the tool's: one line, no traceback
            return _fail(EXIT_INFRASTRUCTURE, full, environ)
        for line in traceback.format_exc().splitlines():  # for a bug report
            outputs.say(line, sys.stderr)  # it may quote an artifact: plain, never a command
        return _fail(
            EXIT_INFRASTRUCTURE, f"{fault_line(err)} (the traceback is in the log)", environ
        )


def _fail(code: int, message: str, environ: Mapping[str, str]) -> int:
    """Say why in the log (one line), as an error annotation, and in the job summary."""
    line = outputs.plain(message.splitlines()[0] if message else "failed")
    outputs.command("error", line)
    print(f"error: {line}", file=sys.stderr)  # may quote an artifact: plain, never a command
    try:
        summary = GitHubEnv.from_env(environ).step_summary
    except InputError:
        summary = None
    what = "bad input" if code == EXIT_BAD_INPUT else "no verdict"
    with contextlib.suppress(OSError):  # the summary file may be what failed: logged above
        outputs.append_summary(
            summary, f"### ❌ agent-eval: {what} (exit {code})\n\n{escape.code(line)}"
        )
    return code
