"""Bounds on what one job reads and forwards (security issue, finding 9): an eval file with no
end, a huge stderr line of an agent, `num_samples` and the number of cases. Each test makes
the job do the unbounded thing it did before and checks that it is now cut or refused. The
bad-input side of each (one line, exit 2) is also a row of tests/test_bad_input_catalog.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent_eval_action.errors import InputError
from agent_eval_action.evalset.models import Content
from agent_eval_action.files import read_bytes
from agent_eval_action.metrics.criteria import MAX_NUM_SAMPLES, JudgeModelOptions
from agent_eval_action.pipeline import suite
from agent_eval_action.runners.command import STDERR_LINE_BYTES, run_command_suite
from agent_eval_action.traces import CaseRunRequest

SRC = Path(suite.__file__).resolve().parents[2]

# --- an eval file that reports no size: a symlink to /dev/zero ---------------------------


def _limit_memory() -> None:  # in the child: an unbounded read fails fast instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_eval_file_linked_to_dev_zero_is_read_to_the_cap_and_refused(tmp_path):
    link = tmp_path / "d.evalset.json"
    link.symlink_to("/dev/zero")
    assert link.stat().st_size == 0  # what the size check alone saw: it passed
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from agent_eval_action.errors import InputError
        from agent_eval_action.files import read_bytes
        try:
            read_bytes(Path({str(link)!r}), "d.evalset.json", limit=1 << 20)
        except InputError as err:
            print(err)
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        preexec_fn=_limit_memory,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    limit = 1 << 20
    assert done.stdout.strip() == (
        f"d.evalset.json: file is more than {limit} bytes; the limit is {limit}"
    )


def test_the_cap_is_exact(tmp_path):
    path = tmp_path / "d.json"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, "d.json", limit=100) == b"x" * 100
    with pytest.raises(InputError, match="the limit is 99"):
        read_bytes(path, "d.json", limit=99)


# --- a huge stderr line of an agent --------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") == "end":
            continue
        size = int(message["user_content"]["parts"][0]["text"])
        sys.stderr.write("x" * size + "é" * 10 + "\\n")
        sys.stderr.write("short line after it\\n")
        sys.stderr.flush()
        print(json.dumps({"id": message["id"], "final_response": None}), flush=True)
    """
)


def _run_worker(tmp_path: Path, size: int) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER, encoding="utf-8")
    request = CaseRunRequest(
        eval_set_id="set",
        eval_id="c",
        run=1,
        user_contents=[Content.from_text(str(size), role="user")],
    )
    command = shlex.join([sys.executable, str(worker)])
    [trace] = asyncio.run(run_command_suite([request], command, concurrency=1, timeout=60))
    assert trace.error is None, trace.error


def _forwarded(err: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in err.splitlines() if line.startswith("[worker ")]


TAIL = "é" * 10  # 20 bytes after the x's


def test_a_huge_stderr_line_is_forwarded_cut_and_says_how_much(tmp_path, capfd):
    size = 4 * 1024 * 1024
    _run_worker(tmp_path, size)
    cut = size + 20 - STDERR_LINE_BYTES
    assert _forwarded(capfd.readouterr().err) == [
        "x" * STDERR_LINE_BYTES + f" …({cut:,} bytes cut)",
        "short line after it",
    ]


def test_a_stderr_line_at_the_cap_is_forwarded_whole(tmp_path, capfd):
    _run_worker(tmp_path, STDERR_LINE_BYTES - 20)  # with the 20 bytes of TAIL: the cap exactly
    assert _forwarded(capfd.readouterr().err) == [
        "x" * (STDERR_LINE_BYTES - 20) + TAIL,
        "short line after it",
    ]


def test_a_cut_never_splits_a_character(tmp_path, capfd):
    _run_worker(tmp_path, STDERR_LINE_BYTES - 1)  # the cap falls inside the first "é"
    assert (
        _forwarded(capfd.readouterr().err)[0] == "x" * (STDERR_LINE_BYTES - 1) + " …(20 bytes cut)"
    )


# --- num_samples ----------------------------------------------------------------------------


def test_num_samples_has_a_maximum():
    assert JudgeModelOptions(num_samples=MAX_NUM_SAMPLES).num_samples == MAX_NUM_SAMPLES
    with pytest.raises(ValidationError, match=f"less than or equal to {MAX_NUM_SAMPLES}"):
        JudgeModelOptions(num_samples=MAX_NUM_SAMPLES + 1)
    with pytest.raises(ValidationError):
        JudgeModelOptions(num_samples=10**9)  # a billion judge calls per answer, before


# --- the number of cases in one suite --------------------------------------------------------


def _evalset(eval_set_id: str, count: int) -> str:
    user = {"role": "user", "parts": [{"text": "hi"}]}
    cases = [{"eval_id": f"c{n}", "conversation": [{"user_content": user}]} for n in range(count)]
    return json.dumps({"eval_set_id": eval_set_id, "eval_cases": cases})


def test_a_suite_over_the_case_limit_is_refused_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "MAX_CASES", 5)
    (tmp_path / "a.evalset.json").write_text(_evalset("a", 3), encoding="utf-8")
    (tmp_path / "b.evalset.json").write_text(_evalset("b", 2), encoding="utf-8")
    assert suite.load_suite([str(tmp_path)]).case_count == 5  # at the limit: fine
    (tmp_path / "c.evalset.json").write_text(_evalset("c", 1), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        suite.load_suite([str(tmp_path)])
    assert str(raised.value).endswith(
        "c.evalset.json: the suite has 6 cases with this file; the limit is 5"
    )


def test_the_case_limit_is_documented():
    assert suite.MAX_CASES == 100_000
    doc = (SRC.parent / "docs" / "security.md").read_text(encoding="utf-8")
    assert "100,000 cases" in doc and f"`num_samples` above {MAX_NUM_SAMPLES}" in doc
    assert f"{STDERR_LINE_BYTES // 1024} KiB" in doc and "64 MiB" in doc
