"""The gate-trust benches run: a few trials of each through the real engine, so a change
of the engine's types cannot leave them broken until someone measures (how often the gate
is right is the benches' business, not a test's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize(
    "args",
    [
        ["gate_trust.py", "--trials", "100", "--quick"],
        # with history and with a sampled first baseline: confirmation and sampling rounds
        # each trial again with one re-run a round (--check-ahead): the same verdicts
        [
            "gate_trust_single.py",
            "--trials",
            "3",
            "--cases",
            "20",
            "--scenarios",
            "ab",
            "--check-ahead",
        ],
        # the same PRs with paired runs on main's code beside the confirmation rounds
        ["gate_trust_single.py", "--trials", "3", "--cases", "20", "--scenarios", "b", "--paired"],
    ],
    ids=["gate_trust", "gate_trust_single", "gate_trust_single_paired"],
)
def test_gate_trust_bench_runs(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "(b)" in done.stdout  # a row of the table was printed
    if "--paired" in args:  # and its paired twin, with main's runs counted
        assert "10 older, paired" in done.stdout
        assert "sampled 10, paired" in done.stdout
    if "--check-ahead" in args:  # started ahead or not, each trial decides alike
        assert "without run-ahead: 0 of 12 trials differ" in done.stdout, done.stdout
