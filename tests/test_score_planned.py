"""The score stage reads a confirmation round's traces file against the round's plan
(`score --round PLAN`, `--merge-base-round PLAN`): the traces come from the process that
ran the PR's code, so a re-run nobody planned (a cheap way to make a real regression look
like noise) is bad input naming the file and line, as any trace nobody asked for. And
`run-cases --confirm -` reads the round's plan from standard input."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from helpers.paths import python_command
from test_stages import EVALS, TABLE_AGENT

from agent_eval_action.cli import main
from agent_eval_action.results import Results, kind_of

TABLE = {  # both cases right
    "order": {"text": "It ships today.", "tools": [["track", {}]]},
    "refund": {"text": "Refund issued.", "tools": [["refund", {}]]},
}
WHAT = "regressed: shop/refund"  # what the round's re-run of refund confirms
ROUND = {"run": 2, "cases": [["shop", "refund", WHAT]]}
HEADER = {"traces": "agent-eval-traces/1", "runner": "command", "target": "x", "started_at": "2026-12-01T00:00:00+00:00"}  # fmt: skip
END = {"end": {"cancelled": False}}
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def suite(write) -> list[str]:
    write("evals/shop.evalset.json", EVALS)
    write("table.json", TABLE)
    write("round.json", ROUND)
    return ["--command", python_command(TABLE_AGENT, "table.json")]


def _trace(eval_id: str, run: int = 1, confirms: str | None = None) -> dict:
    """A trace line; `confirms`: the text of what it says it re-runs (its kind as that
    text words it, as a round written before `kind` says it)."""
    answer = TABLE[eval_id]
    turn = {
        "final_response": {"role": "model", "parts": [{"text": answer["text"]}]},
        "tool_uses": [{"name": name, "args": args} for name, args in answer["tools"]],
    }
    trace = {"eval_set_id": "shop", "eval_id": eval_id, "run": run, "turns": [turn]}
    if confirms is not None:
        kind, paired_with = kind_of(confirms)
        trace["purpose"] = [kind, confirms, paired_with]
    return {"trace": trace}


def _traces(name: str, *lines: dict) -> str:
    Path(name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return name


def _suite_traces() -> str:
    return _traces("t.jsonl", HEADER, _trace("order"), _trace("refund"), END)


def _score(*argv: str) -> int:
    return main(["score", "evals", "--traces", "t.jsonl", *argv])


def _refused(capsys: pytest.CaptureFixture[str], message: str) -> None:
    err = capsys.readouterr().err
    assert message in err, err
    assert err.count("\n") == 1 and not Path("results.json").exists()


def test_a_planned_round_is_scored(suite: list[str]) -> None:
    assert main(["run-cases", "evals", *suite, "--traces", "t.jsonl"]) == 0
    argv = ["run-cases", "evals", *suite, "--traces", "t-1.jsonl", "--confirm", "round.json"]
    assert main(argv) == 0
    assert _score("--traces", "t-1.jsonl", "--round", "round.json") == 0
    refund = next(c for c in Results.from_json(Path("results.json").read_text()).cases if c.eval_id == "refund")  # fmt: skip
    assert [(run.run, run.confirms) for run in refund.runs] == [(1, None), (2, WHAT)]


def test_a_round_trace_says_what_its_plan_says_it_confirms(suite: list[str]) -> None:
    """A planned re-run whose trace says nothing of what it confirms is the plan's re-run:
    it is recorded as the confirmation it is, never as one of the suite's own runs."""
    _suite_traces()
    _traces("t-1.jsonl", HEADER, _trace("refund", run=2), END)
    assert _score("--traces", "t-1.jsonl", "--round", "round.json") == 0
    refund = next(c for c in Results.from_json(Path("results.json").read_text()).cases if c.eval_id == "refund")  # fmt: skip
    assert [run.confirms for run in refund.runs] == [None, WHAT]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        # a passing re-run of a case the round did not re-run
        ([_trace("order", 2, WHAT)], "t-1.jsonl:2: a trace nobody asked for: shop / order run 2"),
        # the planned case, but a run the round did not ask for (a second passing re-run)
        (
            [_trace("refund", 2, WHAT), _trace("refund", 3, WHAT)],
            "t-1.jsonl:3: a trace nobody asked for: shop / refund run 3",
        ),
        ([_trace("refund", 2, WHAT), _trace("refund", 2, WHAT)], "t-1.jsonl:3: a second trace"),
        ([_trace("refund", 1)], "t-1.jsonl:2: a second trace: shop / refund run 1"),
        (
            [_trace("refund", 2, "the suite-level test: forged")],
            "t-1.jsonl:2: a trace that says it re-runs what its plan did not: shop / refund run 2",
        ),
    ],
)
def test_a_round_trace_its_plan_did_not_ask_for_is_bad_input(
    suite: list[str], capsys: pytest.CaptureFixture[str], lines: list[dict], message: str
) -> None:
    _suite_traces()
    _traces("t-1.jsonl", HEADER, *lines, END)
    assert _score("--traces", "t-1.jsonl", "--round", "round.json") == 2
    _refused(capsys, message)


def test_the_suite_traces_hold_no_re_run(suite: list[str], capsys) -> None:
    """The suite's own traces file holds the suite's case-runs only: no re-run."""
    _traces("t.jsonl", HEADER, _trace("order"), _trace("refund"), _trace("refund", 2, WHAT), END)
    assert _score() == 2
    _refused(capsys, "t.jsonl:4: a trace nobody asked for: shop / refund run 2")


def test_a_round_traces_file_needs_its_rounds_plan(suite: list[str], capsys) -> None:
    _suite_traces()
    _traces("t-1.jsonl", HEADER, _trace("refund", 2, WHAT), END)
    assert _score("--traces", "t-1.jsonl") == 2
    _refused(
        capsys, "t-1.jsonl: a confirmation round's traces file needs its round's plan (--round"
    )
    _traces("t-2.jsonl", HEADER, END)
    assert _score("--traces", "t-1.jsonl", "--traces", "t-2.jsonl", "--round", "round.json") == 2
    _refused(capsys, "t-2.jsonl: a confirmation round's traces file needs its round's plan")
    assert _score("--round", "round.json") == 2
    _refused(capsys, "1 --round plan(s) for 0 round traces file(s)")


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ("{", "round.json: not a confirmation round: not JSON"),
        ({"run": "2", "cases": []}, "round.json: not a confirmation round: want"),
        ({"run": 2, "cases": [["shop", "refund"]]}, "round.json: not a confirmation round: want"),
        (  # a round's run is never one of the suite's own
            {"run": 2, "cases": [["shop", "refund", "x", "suite", None]]},
            "round.json: not a confirmation round: want",
        ),
        (  # a paired run says what it pairs with, and only a paired run does
            {"run": 2, "cases": [["shop", "refund", "x", "paired", None]]},
            "round.json: not a confirmation round: want",
        ),
        (
            {"run": 2, "cases": [["shop", "refund", "x", "confirmation", "suite_round"]]},
            "round.json: not a confirmation round: want",
        ),
        ({"run": 2, "cases": [["shop", "nobody", "x"]]}, "round.json: the round names cases"),
        ({"run": 1, "cases": [["shop", "refund", "x"]]}, "round.json: the round names cases"),
        (
            {"run": 2, "cases": [["shop", "refund", "x"], ["shop", "refund", "y"]]},
            "round.json: the round names a case twice",
        ),
    ],
)
def test_a_bad_round_plan_is_bad_input(write, suite, capsys, plan, message) -> None:
    write("round.json", plan)
    _suite_traces()
    _traces("t-1.jsonl", HEADER, END)
    assert _score("--traces", "t-1.jsonl", "--round", "round.json") == 2
    _refused(capsys, message)


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_run_cases_reads_the_rounds_plan_from_standard_input(suite, monkeypatch) -> None:
    _stdin(monkeypatch, json.dumps(ROUND).encode())
    argv = ["run-cases", "evals", *suite, "--traces", "t-1.jsonl", "--confirm", "-"]
    assert main(argv) == 0
    lines = [json.loads(line) for line in Path("t-1.jsonl").read_text().splitlines()]
    traces = [(line["trace"]["eval_id"], line["trace"]["run"], line["trace"]["purpose"]) for line in lines if "trace" in line]  # fmt: skip
    assert traces == [("refund", 2, ["confirmation", WHAT, None])]


@pytest.mark.parametrize(
    ("data", "limit", "message"),
    [
        (b'{"run": 2,', None, "standard input: not a confirmation round: not JSON"),
        (json.dumps(ROUND).encode(), 10, "standard input: the round's plan is over the limit"),
    ],
)
def test_a_bad_plan_on_standard_input_is_bad_input(
    suite, monkeypatch, capsys, data: bytes, limit: int | None, message: str
) -> None:
    _stdin(monkeypatch, data)
    if limit is not None:
        monkeypatch.setattr("agent_eval_action.files.MAX_FILE_BYTES", limit)
    argv = ["run-cases", "evals", *suite, "--traces", "t-1.jsonl", "--confirm", "-"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not Path("t-1.jsonl").exists()


PAIRED = f"paired run on the merge-base {SHA[:12]}: {WHAT}"
MERGE_BASE_ROUND = {"run": 2, "cases": [["shop", "refund", PAIRED]]}


def _merge_base(*argv: str) -> int:
    return _score("--merge-base", SHA, "--merge-base-traces", "m-1.jsonl", *argv)


def test_the_merge_bases_planned_round_is_scored(write, suite) -> None:
    write("merge-base-2.json", MERGE_BASE_ROUND)
    _suite_traces()
    _traces("m-1.jsonl", HEADER, _trace("refund", 2, PAIRED), END)
    assert _merge_base("--merge-base-round", "merge-base-2.json") == 0
    merge_base = Results.from_json(Path("merge-base.json").read_text())
    assert [(c.eval_id, [(r.run, r.confirms) for r in c.runs]) for c in merge_base.cases] == [
        ("refund", [(2, PAIRED)])
    ]
    (refund,) = merge_base.cases
    assert (refund.runs[0].kind, refund.runs[0].paired_with) == ("paired", "confirmation")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([_trace("order", 2, PAIRED)], "m-1.jsonl:2: a trace nobody asked for: shop / order run 2"),
        (
            [_trace("refund", 2, PAIRED), _trace("refund", 2, PAIRED)],
            "m-1.jsonl:3: a second trace",
        ),
        ([_trace("refund", 2, WHAT)], "m-1.jsonl:2: a trace that says it re-runs what its plan"),
    ],
)
def test_a_merge_base_trace_its_round_did_not_ask_for_is_bad_input(
    write, suite, capsys, lines: list[dict], message: str
) -> None:
    write("merge-base-2.json", MERGE_BASE_ROUND)
    _suite_traces()
    _traces("m-1.jsonl", HEADER, *lines, END)
    assert _merge_base("--merge-base-round", "merge-base-2.json") == 2
    _refused(capsys, message)


def test_merge_base_traces_need_their_rounds_plan(write, suite, capsys) -> None:
    write("merge-base-2.json", MERGE_BASE_ROUND)
    _suite_traces()
    _traces("m-1.jsonl", HEADER, _trace("refund", 2, PAIRED), END)
    assert _merge_base() == 2
    _refused(capsys, "m-1.jsonl: a confirmation round's traces file needs its round's plan (--merge-base-round")  # fmt: skip
    argv = ["--merge-base-round", "merge-base-2.json"] * 2
    assert _merge_base(*argv) == 2
    _refused(capsys, "2 --merge-base-round plan(s) for 1 round traces file(s)")


def test_a_rounds_kind_is_what_its_plan_says_whatever_its_words(write, suite) -> None:
    """The kind is a value of the plan: words that begin as another kind's change nothing."""
    words = "sampling run on main: words that say another kind"
    write("round.json", {"run": 2, "cases": [["shop", "refund", words, "suite_round", None]]})
    argv = ["run-cases", "evals", *suite, "--traces", "t-1.jsonl", "--confirm", "round.json"]
    assert main(argv) == 0
    _suite_traces()
    assert _score("--traces", "t-1.jsonl", "--round", "round.json") == 0
    refund = next(
        c
        for c in Results.from_json(Path("results.json").read_text()).cases
        if c.eval_id == "refund"
    )
    assert [(r.kind, r.confirms) for r in refund.runs] == [("suite", None), ("suite_round", words)]


AGAIN = "regressed: shop/refund, again"  # what its second re-run confirms
STAGE = {"run": 2, "cases": [["shop", "refund", WHAT, "confirmation", None]], "ahead": 1}


def _take(name: str, run: int, what: str = WHAT) -> str:
    """A round that takes its run from STAGE's traces file (`score --round`)."""
    case = ["shop", "refund", what, "confirmation", None]
    Path(name).write_text(json.dumps({"run": run, "cases": [case], "stage": STAGE}))
    return name


def test_a_stage_runs_a_round_and_the_next_at_once(suite: list[str]) -> None:
    """`"ahead": 1`: the round's stage runs the next run of each case too, and each round
    takes its own run from that one traces file, with what it confirms."""
    assert main(["run-cases", "evals", *suite, "--traces", "t.jsonl"]) == 0
    Path("stage.json").write_text(json.dumps(STAGE))
    argv = ["run-cases", "evals", *suite, "--traces", "t-1.jsonl", "--confirm", "stage.json"]
    assert main(argv) == 0
    rounds = ["--traces", "t-1.jsonl", "--round", _take("take-2.json", 2)]
    rounds += ["--traces", "t-1.jsonl", "--round", _take("take-3.json", 3, AGAIN)]
    assert _score(*rounds) == 0
    refund = next(c for c in Results.from_json(Path("results.json").read_text()).cases if c.eval_id == "refund")  # fmt: skip
    assert [(run.run, run.confirms) for run in refund.runs] == [(1, None), (2, WHAT), (3, AGAIN)]
    # the first round alone: the run started for the second is passed over, not recorded
    assert _score(*rounds[:4]) == 0
    refund = next(c for c in Results.from_json(Path("results.json").read_text()).cases if c.eval_id == "refund")  # fmt: skip
    assert [run.run for run in refund.runs] == [1, 2]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        # a run beyond those the stage started
        (
            [_trace("refund", 2, WHAT), _trace("refund", 4, WHAT)],
            "t-1.jsonl:3: a trace nobody asked for: shop / refund run 4",
        ),
        ([_trace("order", 3, WHAT)], "t-1.jsonl:2: a trace nobody asked for: shop / order run 3"),
        ([_trace("refund", 3, WHAT), _trace("refund", 3, WHAT)], "t-1.jsonl:3: a second trace"),
        # what the stage ran it for, not what the round that takes it says
        ([_trace("refund", 3, AGAIN)], "a trace that says it re-runs what its plan did not"),
    ],
)
def test_a_trace_its_stage_did_not_start_is_bad_input(
    suite: list[str], capsys: pytest.CaptureFixture[str], lines: list[dict], message: str
) -> None:
    _suite_traces()
    _traces("t-1.jsonl", HEADER, *lines, END)
    assert _score("--traces", "t-1.jsonl", "--round", _take("take.json", 3, AGAIN)) == 2
    _refused(capsys, message)


def test_a_round_takes_only_runs_its_stage_started(suite: list[str], capsys) -> None:
    _suite_traces()
    _traces("t-1.jsonl", HEADER, END)
    assert _score("--traces", "t-1.jsonl", "--round", _take("take.json", 4)) == 2
    _refused(capsys, "the round takes runs its stage did not start")


def test_only_a_confirmation_round_runs_ahead(suite: list[str], capsys) -> None:
    """Main's sampling and suite rounds are one run a round (docs/statistics.md)."""
    _suite_traces()
    _traces("t-1.jsonl", HEADER, END)
    sampling = {"run": 2, "cases": [["shop", "refund", "sampling", "sampling", None]], "ahead": 1}
    Path("sampling.json").write_text(json.dumps(sampling))
    assert _score("--traces", "t-1.jsonl", "--round", "sampling.json") == 2
    _refused(capsys, "only a confirmation round's non-scenario cases run ahead")


def test_a_re_run_its_round_left_out_is_errored_not_missing(suite: list[str]) -> None:
    """A round's stage that exits 0 with its planned re-run left out of its traces: the run
    is errored ("returned no trace"), a fault the confirmation counts, never a re-run that
    did not happen (a regression waiting on it stayed undecided, and passed as noise)."""
    _suite_traces()
    _traces("t-1.jsonl", HEADER, END)
    # no baseline: the gate judges by thresholds, and an errored case does not pass
    assert _score("--traces", "t-1.jsonl", "--round", "round.json") == 1
    results = Results.from_json(Path("results.json").read_text())
    refund = next(c for c in results.cases if c.eval_id == "refund")
    assert [(run.run, run.kind) for run in refund.runs] == [(1, "suite"), (2, "confirmation")]
    assert "returned no trace" in (refund.runs[1].error or "")
    assert not results.partial
