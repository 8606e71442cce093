"""Where the repository's files are, and how a test runs a script with this interpreter."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
WORKERS = TESTS / "workers"  # agents and protocol workers run in child processes
# ADK's own integration eval files (a copy of google/adk-python's tests), beside the repo.
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "adk-integration"


def python_command(script: Path, *args: str) -> str:
    """A --command string running a script with this interpreter."""
    return shlex.join([sys.executable, str(script), *args])
