"""The command line (docs/cli.md): `agent-eval-action COMMAND ...`.

One module per command, each with `add_arguments(parser)` and `handle(args)`. Building the
parser imports only these light modules; a command's handler imports what it needs when
it runs, so `--help` and usage errors stay fast.

Exit codes (errors.py): 0 passed, 1 gate failed, 2 bad input or usage, 3 no verdict:
infrastructure failure, cancellation (partial Results are still written), a file that a
full disk kept from being written (one line naming it), or a fault of the tool itself (an
unexpected exception, its traceback printed: never the gate's 1).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..errors import (
    EXIT_BAD_INPUT,
    EXIT_INFRASTRUCTURE,
    InfrastructureError,
    InputError,
    disk_full_line,
    fault_line,
)
from ..files import BENEATH_ENV, read_beneath
from ..init import become_init
from . import accept, action, compare, merge, run, run_cases, score, serve_users
from .args import Parser, spread

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a reader that left

# (name, module, help) in the order `--help` lists them; the stage commands come last.
COMMANDS = (
    ("run", run, "run eval files against an agent, score them, and gate"),
    ("compare", compare, "compare a Results file with its baseline and gate on it"),
    ("merge", merge, "merge the Results of shards into one"),
    (
        "accept",
        accept,
        "rewrite the eval files of chosen cases to expect what the agent now does",
    ),
    (
        "action",
        action,
        "the GitHub Action's entry point: reads INPUT_* and GITHUB_* from the environment",
    ),
    ("run-cases", run_cases, "stage 1 of run: run the agent only, write its traces"),
    ("score", score, "stage 2 of run: score a traces file (judge included), write Results, gate"),
    (
        "serve-users",
        serve_users,
        "the user simulator of scenario cases, for run-cases --user-turns",
    ),
)


def build_parser() -> Parser:
    parser = Parser(
        prog="agent-eval-action",
        description="Run ADK eval files against an agent, score them as ADK does, write results.json.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")
    for name, module, help_text in COMMANDS:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub)
        sub.set_defaults(handler=module.handle)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    become_init()  # as a container's PID 1 (the console script too): init.py
    args = build_parser().parse_args(spread(sys.argv[1:] if argv is None else argv))
    beneath = os.environ.get(BENEATH_ENV)  # a child of the action's: read as it does
    if beneath:
        read_beneath(Path(beneath))
    try:
        return int(args.handler(args))
    except BrokenPipeError:  # `compare … | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except InfrastructureError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    except Exception as err:  # a fault of this tool: no verdict, never the gate's exit 1
        if full := disk_full_line(err):  # not the tool's fault: one line, no traceback
            print(f"error: {full}", file=sys.stderr)
            return EXIT_INFRASTRUCTURE
        traceback.print_exc()
        print(f"error: {fault_line(err)} (the traceback is above)", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
