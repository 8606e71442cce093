"""Hermetic tools (docs/hermetic-tools.md): the example agent's tool calls answered from
main's recording (`--replay-tools`) or from the eval file (`--tools-from-eval-file`), run
through google-adk's real Runner with tools that raise if they are ever called."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from helpers.adk_agents import write_probe_agent
from helpers.layout import github_layout
from helpers.paths import ISOLATED, ROOT

from agent_eval_action.action.agent_run import hermetic_arguments
from agent_eval_action.action.settings import parse_settings
from agent_eval_action.cli import main
from agent_eval_action.errors import InputError
from agent_eval_action.pipeline.suite import load_suite
from agent_eval_action.results import Results
from agent_eval_action.runners.tool_answers import (
    AnswerBook,
    CaseAnswers,
    Entry,
    HermeticTools,
    StrictMiss,
    canonical,
    from_eval_case,
)

EXAMPLE = ROOT / "examples" / "customer_support"
FAILS_ON_PURPOSE = "gold_damaged_refund"
# appended to a copy of the example's tools.py: each tool raises if it is ever run
RAISING = """

def _raising(tool):
    import functools

    @functools.wraps(tool)
    def called_live(*args, **kwargs):
        raise RuntimeError(f"{tool.__name__} was called live")

    return called_live


lookup_order = _raising(lookup_order)
issue_refund = _raising(issue_refund)
escalate_to_human = _raising(escalate_to_human)
track_shipment = _raising(track_shipment)
"""
RAN_LIVE = "was called live"


def agent_copy(parent: Path, *, raising: bool) -> Path:
    """The example agent under a fresh package name (Python caches packages by name)."""
    directory = parent / f"support_{uuid.uuid4().hex[:10]}"
    shutil.copytree(EXAMPLE, directory, ignore=shutil.ignore_patterns("__pycache__"))
    if raising:
        with (directory / "tools.py").open("a") as tools:
            tools.write(RAISING)
    return directory


def run_example(agent: Path, out: Path, *flags: str) -> int:
    """`run` of the agent copy's own eval files, the Results to `out`."""
    return main(["run", str(agent / "evals"), "--agent", str(agent), "--out", str(out), *flags])


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """Main's baseline of the example, recorded as a push run records it (live tools)."""
    where = tmp_path_factory.mktemp("main")
    out = where / "base.json"
    assert run_example(EXAMPLE, out, "--record-baseline", "--baseline-runs", "1") == 0
    return out


def by_case(path: Path) -> dict:
    return {case.eval_id: case for case in Results.from_json(path.read_text()).cases}


def calls_of(case, *, named=None) -> list[tuple[str, dict]]:
    return [
        (call.name, call.args)
        for run in case.runs
        for turn in run.turns()
        if turn.actual is not None
        for call in turn.actual.tool_uses
        if named is None or call.name == named
    ]


@pytest.mark.adk
def test_replay_strict_answers_every_call_from_mains_recording(tmp_path, baseline):
    agent = agent_copy(tmp_path, raising=True)
    out = tmp_path / "pr.json"
    replay = ("--baseline", str(baseline), "--replay-tools", "--replay-strict")
    # a time budget no run can meet: answered calls take none of the tools' time, so it is
    # not judged (the tool-call budget still is, and holds)
    budgets = ("--budget", "invocation_duration_v1=0", "--budget", "tool_call_count_v1=2")
    code = run_example(agent, out, *replay, *budgets)
    main_cases, pr_cases = by_case(baseline), by_case(out)
    assert code == 0  # the deliberate failure fails on main too: no regression
    assert {k: c.status for k, c in pr_cases.items()} == {
        k: c.status for k, c in main_cases.items()
    }
    for eval_id, case in pr_cases.items():
        [run] = case.runs
        assert run.error is None and RAN_LIVE not in (run.log or ""), eval_id
        transfers = len(calls_of(case, named="transfer_to_agent"))
        assert run.tools is not None and run.tools.first_miss is None, eval_id
        # every call but transfer_to_agent (ADK's, never answered) came from the recording
        assert run.tools.from_recording == len(calls_of(case)) - transfers > 0, eval_id
        assert (run.tools.live, run.tools.from_eval_file) == (transfers, 0), eval_id
        duration = case.efficiency["invocation_duration_v1"]
        assert duration.answered and not duration.over_budget and duration.total > 0, eval_id
        assert not case.efficiency["tool_call_count_v1"].answered
        answers = [t.actual.final_response for t in run.turns()]
        assert answers == [t.actual.final_response for t in main_cases[eval_id].runs[0].turns()]
    # the recording knows which calls did more than answer: transfer_to_agent moved control
    [parcel] = main_cases["where_is_my_parcel"].runs
    assert parcel.tool_effects == [[["transfer_to_agent"], []]]


def changed_order(evals: Path, eval_id: str, old: str, new: str) -> None:
    """The PR's eval file asks case `eval_id` about another order: a call main never made."""
    path = evals / "refund_flow.evalset.json"
    data = json.loads(path.read_text())
    case = next(c for c in data["eval_cases"] if c["eval_id"] == eval_id)
    text = json.dumps(case).replace(old, new)
    data["eval_cases"][data["eval_cases"].index(case)] = json.loads(text)
    path.write_text(json.dumps(data, indent=1))


@pytest.mark.adk
def test_a_call_with_new_arguments_errors_under_strict_and_runs_live_without(tmp_path, baseline):
    strict_agent, live_agent = (agent_copy(tmp_path, raising=r) for r in (True, False))
    for agent in (strict_agent, live_agent):
        changed_order(agent / "evals", "unverified_customer", "A-4471", "A-3090")
    replay = ("--baseline", str(baseline), "--replay-tools")
    miss = 'turn 1: lookup_order {"order_id":"A-3090"} (no recorded call of this case'

    run_example(strict_agent, tmp_path / "strict.json", *replay, "--replay-strict")
    strict = by_case(tmp_path / "strict.json")["unverified_customer"]
    assert strict.status == "errored"
    [run] = strict.runs
    assert run.error.startswith("--replay-strict: a tool call found no answer: " + miss)
    assert RAN_LIVE not in (run.log or "")  # the tool never ran: the run stopped at the miss
    assert run.tools.first_miss.startswith(miss) and run.tools.live == 0
    # the other cases still replay (A-3090 is recorded, but for another case only)
    assert by_case(tmp_path / "strict.json")["damaged_item_refund"].status == "passed"

    report = tmp_path / "report.md"
    run_example(
        live_agent, tmp_path / "live.json", *replay, "--format", "markdown", "--report", str(report)
    )
    [run] = by_case(tmp_path / "live.json")["unverified_customer"].runs
    assert run.error is None
    assert run.tools.first_miss.startswith(miss)
    assert (run.tools.live, run.tools.from_recording) == (1, 0)
    # the live tool answered: the kettle, not the blender the recording would have said
    assert "Steel Kettle" in run.turns()[0].actual.final_response.parts[0].text
    # the report says it per case, the miss first
    lines = report.read_text().split("**Tool calls answered**")[1].strip().splitlines()
    assert lines[2].startswith("- <code>unverified\\_customer</code>: 1 live; first miss: ")
    assert "- <code>damaged\\_item\\_refund</code>: 2 from the recording" in lines


def with_expected_responses(evals: Path, baseline: Path, events_form: str) -> None:
    """The eval files with each expected call's response written beside it (what main's
    tools answered): one case in ADK's invocation_events form, the legacy rows'
    `mock_tool_output`."""
    recorded = by_case(baseline)
    legacy = evals / "order_status.test.json"
    rows = json.loads(legacy.read_text())
    for row, turn in zip(rows, recorded["order_status"].runs[0].turns(), strict=True):
        for use, response in zip(row["expected_tool_use"], turn.actual.tool_responses, strict=True):
            use["mock_tool_output"] = response.response
    legacy.write_text(json.dumps(rows, indent=1))
    path = evals / "refund_flow.evalset.json"
    data = json.loads(path.read_text())
    for case in data["eval_cases"]:
        turns = recorded[case["eval_id"]].runs[0].turns()
        for invocation, turn in zip(case["conversation"], turns, strict=True):
            responses = [
                {"id": f"r{i}", "name": r.name, "response": r.response}
                for i, r in enumerate(turn.actual.tool_responses)
            ]
            uses = invocation["intermediate_data"]["tool_uses"]
            if case["eval_id"] == FAILS_ON_PURPOSE:
                continue  # its expected lookup was never made: nothing recorded to give
            if case["eval_id"] != events_form:
                invocation["intermediate_data"] = {
                    "tool_uses": [dict(u, id=f"r{i}") for i, u in enumerate(uses)],
                    # listed in reverse: paired by id, not by position
                    "tool_responses": responses[::-1],
                }
                continue
            invocation["intermediate_data"] = {
                "invocation_events": [
                    {"author": "support_agent", "content": {"parts": [{"function_call": u}]}}
                    for u in uses
                ]
                + [
                    {"author": "support_agent", "content": {"parts": [{"function_response": r}]}}
                    for r in responses
                ]
            }
    path.write_text(json.dumps(data, indent=1))


@pytest.mark.adk
def test_tools_from_eval_file_pass_the_examples_cases_with_every_tool_raising(tmp_path, baseline):
    agent = agent_copy(tmp_path, raising=True)
    with_expected_responses(agent / "evals", baseline, events_form="large_refund_escalated")
    out = tmp_path / "pr.json"
    run_example(agent, out, "--tools-from-eval-file", "--replay-strict")
    cases = by_case(out)
    assert cases.pop(FAILS_ON_PURPOSE).status == "errored"  # its refund has no expected answer
    assert {c.status for c in cases.values()} == {"passed"} and len(cases) == 5
    for eval_id, case in cases.items():
        [run] = case.runs
        transfers = len(calls_of(case, named="transfer_to_agent"))
        assert run.tools.from_eval_file == len(calls_of(case)) - transfers > 0, eval_id
        assert run.tools.first_miss is None and RAN_LIVE not in (run.log or ""), eval_id


# --- the answer book: matching, tie-breaks, side effects --------------------------------


def book(*recording: Entry, strict: bool = False, turn: int = 0) -> AnswerBook:
    tools = HermeticTools(replay=True, strict=strict)
    return AnswerBook(tools, CaseAnswers(recording=recording), turn=turn)


def test_run_n_replays_mains_run_n_first():
    first = Entry("lookup", canonical({"id": 1}), {"from": "run 1"}, turn=0, run=1)
    second = Entry("lookup", canonical({"id": 1}), {"from": "run 2"}, turn=0, run=2)
    elsewhere = Entry("lookup", canonical({"id": 1}), {"from": "run 2, turn 2"}, turn=1, run=2)
    tools = HermeticTools(replay=True)
    answers = CaseAnswers(recording=(first, elsewhere, second))
    assert tools.book("s", "c", 2).answers == CaseAnswers()  # another case has no answers
    book_2 = AnswerBook(tools, answers, run=2)
    assert [book_2.answer("lookup", {"id": 1}).response["from"] for _ in range(3)] == [
        "run 2",
        "run 1",
        "run 2, turn 2",
    ]
    book_3 = AnswerBook(tools, answers, run=3)  # a run main did not have: in recorded order
    assert book_3.answer("lookup", {"id": 1}).response == {"from": "run 1"}


def test_arguments_match_canonically_and_the_same_turn_wins():
    earlier = Entry("lookup", canonical({"id": 1, "n": 2.0}), {"from": "turn 1"}, turn=0)
    same = Entry("lookup", canonical({"n": 2, "id": 1}), {"from": "turn 2"}, turn=1)
    answers = book(earlier, same, turn=1)
    assert answers.answer("lookup", {"n": 2, "id": 1.0}).response == {"from": "turn 2"}
    # asked again in the turn: the recording's other answer, not yet used
    assert answers.answer("lookup", {"id": 1, "n": 2}).response == {"from": "turn 1"}
    assert answers.answer("lookup", {"id": 2, "n": 2}) is None  # other arguments: live
    assert answers.tally.from_recording == 2 and answers.tally.live == 1


@pytest.mark.parametrize(
    ("effects", "why"),
    [
        (("state_delta",), "its recorded call also did state_delta: not replayed"),
        (None, "recorded without its event's actions (an older baseline): not replayed"),
    ],
)
def test_a_recorded_call_that_did_more_than_answer_is_not_replayed(effects, why):
    entry = Entry("issue_refund", canonical({"id": "A"}), {"ok": True}, turn=0, effects=effects)
    live = book(entry)
    assert live.answer("issue_refund", {"id": "A"}) is None
    assert live.tally.first_miss == f'turn 1: issue_refund {{"id":"A"}} ({why})'
    strict = book(entry, strict=True)
    with pytest.raises(StrictMiss):
        strict.answer("issue_refund", {"id": "A"})
    assert strict.strict_miss == live.tally.first_miss and strict.tally.live == 0


# --- bad input: one line, exit 2 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--command", "true", "--tools-from-eval-file"], "give --agent DIR"),
        (["--agent", str(EXAMPLE), "--replay-tools"], "--replay-tools answers tool calls from"),
        (["--agent", str(EXAMPLE), "--replay-strict"], "--replay-strict goes with"),
    ],
)
def test_flags_that_cannot_apply_are_one_line_exit_2(capsys, flags, message):
    code = main(["run", str(EXAMPLE / "evals"), *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1


TOOL_PLUGIN = """

class Guard(BasePlugin):
    async def on_tool_error_callback(self, *, tool, tool_args, tool_context, error):
        return {"error": "handled"}


app.plugins.append(Guard(name="guard"))
"""


@pytest.mark.adk
@pytest.mark.parametrize(
    ("export", "code", "refused"),
    [
        ("root_agent", "\nroot_agent.before_tool_callback = lambda **kw: None\n", "agent 'probe' has its own before_tool_callback"),
        ("root_agent", "\nroot_agent.after_tool_callback = lambda **kw: None\n", "agent 'probe' has its own after_tool_callback"),
        ("app", TOOL_PLUGIN, "the app's plugin 'guard' defines on_tool_error_callback"),
    ],
)  # fmt: skip
def test_an_agent_with_its_own_tool_callbacks_is_refused(
    tmp_path, write, capsys, export, code, refused
):
    agent = write_probe_agent(tmp_path / "agents", export=export)
    with (agent / "agent.py").open("a") as source:
        source.write(code)
    write(
        "evals/probe.evalset.json",
        {
            "eval_set_id": "probe_set",
            "eval_cases": [
                {"eval_id": "echo", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}
            ],
        },
    )
    code = main(["run", "evals", "--agent", str(agent), "--tools-from-eval-file"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert refused in err[-1] and err[-1].startswith(f"error: {agent.as_posix()}: ")


# --- the action: the inputs reach the PR's agent stage; push runs record live ------------


@pytest.mark.parametrize(
    ("gate", "baseline", "flags"),
    [
        (True, True, ["--tools-from-eval-file", "--replay-tools", "--replay-strict"]),
        (False, True, ["--tools-from-eval-file", "--replay-strict"]),  # a push records live
        (True, False, ["--tools-from-eval-file", "--replay-strict"]),  # nothing to replay
    ],
)
def test_the_agent_stage_replays_only_when_it_gates_on_a_baseline(gate, baseline, flags):
    env = {f"INPUT_{name.upper()}": "true" for name in INPUTS}
    settings = parse_settings({"INPUT_AGENT": "agent", **env})
    assert hermetic_arguments(settings, Path("b.json") if baseline else None, gate=gate) == flags


INPUTS = ("tools-from-eval-file", "replay-tools", "replay-strict")


@pytest.mark.e2e
@pytest.mark.adk
@ISOLATED
def test_the_action_replays_mains_recording_for_the_prs_agent_as_its_user(
    tmp_path, runner, baseline
):
    """Through the image's entry point, as root, the PR's agent under a user of its own: its
    tools raise if called, and every call is answered from main's recorded baseline."""
    with github_layout("") as layout:
        agent = agent_copy(layout.workspace, raising=True)
        recorded = layout.base / "main-results.json"
        shutil.copy(baseline, recorded)
        recorded.chmod(0o644)
        done = layout.run(
            runner,
            agent=agent.name,
            command="",
            evals=f"{agent.name}/evals",
            baseline=str(recorded),
            **{"replay-tools": "true", "replay-strict": "true"},
        )
        assert done.returncode == 0, done.stderr
        cases = by_case(layout.out / "results.json")
    assert len(cases) == 6
    for eval_id, case in cases.items():
        for run in case.runs:
            assert run.error is None and RAN_LIVE not in (run.log or ""), eval_id
            assert run.tools.first_miss is None and run.tools.from_recording > 0, eval_id


def test_action_inputs_that_cannot_apply_are_one_line_exit_2():
    with pytest.raises(InputError, match="they need the input agent"):
        parse_settings({"INPUT_COMMAND": "x", "INPUT_REPLAY-TOOLS": "true"})
    with pytest.raises(InputError, match="replay-strict goes with"):
        parse_settings({"INPUT_AGENT": "a", "INPUT_REPLAY-STRICT": "true"})


def test_legacy_mock_tool_outputs_are_the_expected_responses_up_to_the_first_without(write):
    write(
        "evals/faq.test.json",
        [
            {
                "query": "Where is A-1?",
                "expected_tool_use": [
                    {
                        "tool_name": "lookup",
                        "tool_input": {"id": "A-1"},
                        "mock_tool_output": "late",
                    },
                    {"tool_name": "track", "tool_input": {"id": "A-1"}},
                    {"tool_name": "notify", "tool_input": {}, "mock_tool_output": {"sent": True}},
                ],
                "reference": "It is late.",
            }
        ],
    )
    [eval_set] = load_suite(["evals"], None, None).eval_sets
    [turn] = eval_set.cases[0].conversation
    # a string is wrapped as ADK wraps a tool's non-dict result; notify's output would pair
    # with track by position, so it is left out
    assert [(r.name, r.response) for r in turn.intermediate_data.tool_responses] == [
        ("lookup", {"result": "late"})
    ]
    [entry] = from_eval_case(eval_set.cases[0])
    assert (entry.name, entry.args, entry.response) == (
        "lookup",
        '{"id":"A-1"}',
        {"result": "late"},
    )


SWALLOWING = """

from google.adk.agents import BaseAgent
from google.adk.events import Event


class Swallowing(BaseAgent):
    \"\"\"Runs its sub-agent and turns any exception into an ordinary answer.\"\"\"

    async def _run_async_impl(self, ctx):
        try:
            async for event in self.sub_agents[0].run_async(ctx):
                yield event
        except Exception:
            text = types.Content(role="model", parts=[types.Part(text="all fine")])
            yield Event(author=self.name, invocation_id=ctx.invocation_id, content=text)


_inner = root_agent
root_agent = Swallowing(name="swallowing", sub_agents=[_inner])
"""


@pytest.mark.adk
def test_a_strict_miss_errors_the_run_even_when_the_agent_swallows_the_exception(tmp_path, write):
    agent = write_probe_agent(tmp_path / "agents")
    with (agent / "agent.py").open("a") as source:
        source.write(SWALLOWING)
    turn = {
        "user_content": {"parts": [{"text": "whoami"}]},
        "final_response": {"parts": [{"text": "all fine"}]},
    }
    write("evals/probe.evalset.json", {"eval_set_id": "probe_set", "eval_cases": [
        {"eval_id": "who", "conversation": [turn]}]})  # fmt: skip
    out = tmp_path / "r.json"
    args = ["run", "evals", "--agent", str(agent), "--out", str(out)]
    main([*args, "--tools-from-eval-file"])
    [run] = by_case(out)["who"].runs
    # without strict the miss runs live, and the agent answers from the tool
    assert run.error is None and run.tools.live == 1 and run.tools.first_miss
    main([*args, "--tools-from-eval-file", "--replay-strict"])
    [run] = by_case(out)["who"].runs
    assert run.turns()[0].actual.final_response.parts[0].text == "all fine"  # it swallowed it
    assert run.error.startswith("--replay-strict: a tool call found no answer: turn 1: whoami {}")


def test_paired_runs_on_the_merge_base_answer_tool_calls_as_the_prs_runs_do(tmp_path):
    from agent_eval_action.cli import build_parser
    from agent_eval_action.cli.paired import stage_arguments

    base = tmp_path / "main.json"
    argv = ["run", "evals", "--agent", "a", "--baseline", str(base), "--paired", "HEAD"]
    hermetic = ["--tools-from-eval-file", "--replay-tools", "--replay-strict"]
    args = build_parser().parse_args([*argv, *hermetic])
    stage = stage_arguments(args)
    assert stage[stage.index("--replay-tools") + 1 :][:2] == ["--baseline", str(base.resolve())]
    assert {"--tools-from-eval-file", "--replay-strict"} <= set(stage)
    assert not set(hermetic) & set(stage_arguments(build_parser().parse_args(argv)))


@pytest.mark.adk
def test_an_unusable_baseline_replays_nothing_and_says_so(tmp_path, baseline, capsys):
    newer = json.loads(baseline.read_text())
    newer["schema"] = "agent-eval-results/9"
    unusable = tmp_path / "newer.json"
    unusable.write_text(json.dumps(newer))
    out = tmp_path / "pr.json"
    assert run_example(EXAMPLE, out, "--baseline", str(unusable), "--replay-tools") in (0, 1)
    warning = "warning: --replay-tools: "
    assert warning in capsys.readouterr().err
    results = Results.from_json(out.read_text())
    assert any(
        w.startswith(warning) and w.endswith("every tool call runs live") for w in results.warnings
    )
    runs = [run for case in results.cases for run in case.runs]
    assert all(run.tools.from_recording == 0 and run.tools.live > 0 for run in runs)
