"""The action's settings (action/settings.py) and action.yml against its contract (docs/action.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent_eval_action.action import settings as s
from agent_eval_action.action.settings import AdkApi, BaselineInput, parse_settings
from agent_eval_action.errors import InputError
from agent_eval_action.github.env import GitHubEnv
from agent_eval_action.report.quiet import CommentWhen

ROOT = Path(__file__).resolve().parent.parent

# The contract (docs/action.md): every input and output of action.yml.
DESIGN_INPUTS = {
    "evals", "agent", "command", "adk-api", "adk-history", "config", "num-runs",
    "concurrency", "confirm-runs", "confirm-limit", "baseline-runs", "paired", "history", "trajectory-policy", "mode", "baseline", "baseline-artifact",
    "baseline-workflow", "baseline-branch", "fail-on", "min-delta", "comment",
    "check-name", "output-dir", "shard", "judge-model", "judge-models", "judge-max-calls",
    "requirements", "timeout",
    "initial-session", "strip-thoughts", "tools-from-eval-file", "replay-tools", "replay-strict",
    "budgets", "accept-label", "allow-fork-dispatch", "github-token", "judge-api-key",
}  # fmt: skip
DESIGN_OUTPUTS = {
    "verdict", "regressions", "trajectory-regressions", "response-regressions",
    "failed-cases", "results-path", "report-path", "comment-url", "baseline-sha",
}  # fmt: skip
# The contract's defaults, as action.yml must declare them
DESIGN_DEFAULTS = {
    "evals": "evals",
    "num-runs": "1",
    "concurrency": "8",
    "confirm-runs": "3",
    "confirm-limit": "300",
    "baseline-runs": "10",
    "paired": "false",
    "history": "10",
    "mode": "auto",
    "baseline": "artifact",
    "baseline-artifact": "agent-eval-results",
    "fail-on": "regression",
    "comment": "always",
    "check-name": "agent-eval",
    "output-dir": "agent-eval-results",
    "accept-label": "agent-eval:accept",
    "allow-fork-dispatch": "false",
    "strip-thoughts": "false",
    "judge-max-calls": "5000",
    "tools-from-eval-file": "false",
    "replay-tools": "false",
    "replay-strict": "false",
    "github-token": "${{ github.token }}",
}


@pytest.fixture(scope="module")
def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def test_action_yml_inputs_and_outputs_are_designs(action: dict) -> None:
    assert set(action["inputs"]) == DESIGN_INPUTS
    assert set(action["outputs"]) == DESIGN_OUTPUTS
    assert all(spec.get("description") for spec in action["inputs"].values())
    assert all(spec.get("description") for spec in action["outputs"].values())


def test_action_yml_defaults_are_designs(action: dict) -> None:
    declared = {
        name: spec["default"] for name, spec in action["inputs"].items() if "default" in spec
    }
    assert declared == DESIGN_DEFAULTS


def test_action_yml_runs_the_dockerfile(action: dict) -> None:
    assert action["runs"] == {"using": "docker", "image": "Dockerfile", "args": ["action"]}
    assert (ROOT / action["runs"]["image"]).is_file()


def test_every_input_has_its_clean_function(action: dict) -> None:
    for name in action["inputs"]:
        clean = getattr(s, "clean_" + name.replace("-", "_"), None)
        assert callable(clean), name
        assert s.CLEANERS[name] is clean
    assert list(s.CLEANERS) == list(action["inputs"])


def test_declared_defaults_mean_what_an_empty_value_means(action: dict) -> None:
    for name, spec in action["inputs"].items():
        if "default" in spec and name != "github-token":
            assert s.CLEANERS[name](spec["default"]) == s.CLEANERS[name](""), name


def env(**inputs: str) -> dict[str, str]:
    return {s.input_env_name(name.replace("_", "-")): value for name, value in inputs.items()}


def test_defaults() -> None:
    got = parse_settings({})
    assert got.evals == ("evals",)
    assert got.agent_input is None
    assert (got.num_runs, got.concurrency, got.timeout) == (1, 8, 600.0)
    assert got.mode == "auto"
    assert got.baseline == BaselineInput("artifact")
    assert got.baseline_artifact == "agent-eval-results"
    assert got.baseline_workflow is got.baseline_branch is None
    assert got.fail_on == ("regression",)
    assert got.min_delta == ()
    assert got.comment == CommentWhen.ALWAYS
    assert (got.check_name, got.output_dir) == ("agent-eval", "agent-eval-results")
    assert got.shard is got.judge_model is got.requirements is got.config is None
    assert got.trajectory_policy is None
    assert got.accept_label == "agent-eval:accept"
    assert got.allow_fork_dispatch is False
    assert got.github_token is None
    assert got.github == GitHubEnv()


def test_hyphenated_names_are_read_with_their_hyphens() -> None:
    assert s.input_env_name("num-runs") == "INPUT_NUM-RUNS"
    got = parse_settings({"INPUT_NUM-RUNS": "3", "INPUT_NUM_RUNS": "5", "INPUT_FAIL-ON": "never"})
    assert got.num_runs == 3
    assert got.fail_on == ("never",)


def test_values_are_stripped_and_empty_means_default() -> None:
    got = parse_settings(env(num_runs=" 4 \n", concurrency="", mode="  "))
    assert (got.num_runs, got.concurrency, got.mode) == (4, 8, "auto")


GOOD = [
    ("evals", "a b/c.test.json\nd.evalset.json:x,y", ("a", "b/c.test.json", "d.evalset.json:x,y")),
    ("evals", "'my evals/x.test.json'", ("my evals/x.test.json",)),
    ("agent", "my_agent", "my_agent"),
    ("command", "python agent.py --flag", "python agent.py --flag"),
    ("adk-api", "http://127.0.0.1:8000/ my_agent", AdkApi("http://127.0.0.1:8000", "my_agent")),
    ("adk-history", ".adk/eval_history\nmore", (".adk/eval_history", "more")),
    ("config", "test_config.json", "test_config.json"),
    ("num-runs", "3", 3),
    ("concurrency", "16", 16),
    ("trajectory-policy", "strict", "strict"),
    ("trajectory-policy", "business", "business"),
    ("trajectory-policy", "IN_ORDER", "business"),  # ADK's names, in any case
    ("trajectory-policy", "exact", "strict"),
    ("trajectory-policy", "Any_Order", "any_order"),
    ("mode", "comment", "comment"),
    ("mode", "merge", "merge"),
    ("baseline", "none", BaselineInput("none")),
    ("baseline", "branch", BaselineInput("branch")),
    ("baseline", "base/results.json", BaselineInput("path", "base/results.json")),
    ("baseline-artifact", "base-results", "base-results"),
    ("baseline-workflow", "evals.yml", "evals.yml"),
    ("baseline-branch", "develop", "develop"),
    ("fail-on", "trajectory, threshold", ("trajectory", "threshold")),
    ("min-delta", "trajectory=0.05, response=0.2", (("trajectory", 0.05), ("response", 0.2))),
    ("min-delta", "0.1", ((None, 0.1),)),
    ("comment", "false", CommentWhen.NEVER),
    ("comment", "FALSE", CommentWhen.NEVER),
    ("comment", "True", CommentWhen.ALWAYS),
    ("comment", "on-change", CommentWhen.ON_CHANGE),
    ("comment", "On-Regression", CommentWhen.ON_REGRESSION),
    ("check-name", "evals (main)", "evals (main)"),
    ("output-dir", "out", "out"),
    ("shard", "2/4", (2, 4)),
    ("judge-model", "gemini-2.5-flash", "gemini-2.5-flash"),
    ("requirements", "requirements.txt", "requirements.txt"),
    ("timeout", "90.5", 90.5),
    ("initial-session", "evals/initial.session.json", "evals/initial.session.json"),
    ("strip-thoughts", "TRUE", True),
    ("strip-thoughts", "false", False),
    (
        "budgets",
        "tool_call_count_v1=8, token_usage_v1=2e4\ntool_call_count_v1=6",
        (("tool_call_count_v1", 6.0), ("token_usage_v1", 20000.0)),  # the last one wins
    ),
    ("accept-label", "ok-to-regress", "ok-to-regress"),
    ("allow-fork-dispatch", "true", True),
    ("allow-fork-dispatch", "FALSE", False),
    ("github-token", "ghs_secret", "ghs_secret"),
]


@pytest.mark.parametrize(("name", "text", "expected"), GOOD)
def test_good_values(name: str, text: str, expected: object) -> None:
    assert s.CLEANERS[name](text) == expected
    got = parse_settings(env(**{name.replace("-", "_"): text}))
    assert getattr(got, name.replace("-", "_")) == expected


BAD = [
    ("evals", "'unclosed", "input evals: cannot split"),
    ("command", 'python "agent.py', "input command: cannot split"),
    ("adk-api", "http://127.0.0.1:8000", "input adk-api: must be 'URL APP'"),
    ("adk-api", "localhost:8000 my_agent", "input adk-api: 'localhost:8000' is not an http"),
    ("num-runs", "0", "input num-runs: must be a whole number of at least 1, got '0'"),
    ("num-runs", "two", "input num-runs: must be a whole number of at least 1, got 'two'"),
    ("num-runs", "1.5", "input num-runs: must be a whole number"),
    ("concurrency", "-1", "input concurrency: must be a whole number of at least 1, got '-1'"),
    ("trajectory-policy", "loose", "input trajectory-policy: must be business (IN_ORDER)"),
    ("mode", "pr", "input mode: must be one of auto, run, compare, comment, merge, got 'pr'"),
    ("fail-on", "regresion", "input fail-on: unknown policy regresion;"),
    ("fail-on", "never,threshold", "input fail-on: `never` cannot be combined"),
    ("min-delta", "speed=0.1", "input min-delta: unknown axis 'speed'"),
    ("min-delta", "response=2", "input min-delta: must be within [0, 1], got 2.0"),
    ("min-delta", "lots", "input min-delta: 'lots' is not a number"),
    (
        "comment",
        "yes",
        "input comment: must be one of always, on-change, on-regression, never "
        "(or true, false), got 'yes'",
    ),
    ("allow-fork-dispatch", "1", "input allow-fork-dispatch: must be true or false, got '1'"),
    ("shard", "5/4", "input shard: '5/4': the index must be within 1..4"),
    ("shard", "half", "input shard: 'half' is not I/N"),
    ("timeout", "0", "input timeout: must be a positive number of seconds, got '0'"),
    ("timeout", "inf", "input timeout: must be a positive number of seconds"),
    ("timeout", "soon", "input timeout: must be a positive number of seconds"),
    ("strip-thoughts", "yes", "input strip-thoughts: must be true or false, got 'yes'"),
    (
        "budgets",
        "tool_calls=3",
        "input budgets: 'tool_calls=3': give METRIC=MAX with METRIC one of",
    ),
    ("budgets", "token_usage_v1", "input budgets: 'token_usage_v1' is not METRIC=MAX"),
    ("budgets", "token_usage_v1=lots", "input budgets: token_usage_v1: 'lots' is not a number"),
    ("budgets", "token_usage_v1=-1", "input budgets: token_usage_v1: the budget must be a number"),
    ("budgets", "token_usage_v1=nan", "input budgets: token_usage_v1: the budget must be a number"),
]


@pytest.mark.parametrize(("name", "text", "message"), BAD)
def test_bad_values_name_the_input(name: str, text: str, message: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_settings(env(**{name.replace("-", "_"): text}))
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_one_agent_input_at_most() -> None:
    with pytest.raises(InputError, match=r"^inputs agent and adk-history: give only one of"):
        parse_settings(env(agent="a", adk_history="h"))
    got = parse_settings(env(adk_api="http://h:1 app"))
    assert got.agent_input == got.require_agent() == "adk-api"


def test_running_needs_an_agent_input() -> None:
    with pytest.raises(InputError, match="needs one of the inputs agent, command, adk-api"):
        parse_settings({}).require_agent()


def test_the_token_stays_out_of_the_repr() -> None:
    assert "ghs_secret" not in repr(parse_settings(env(github_token="ghs_secret")))


def test_github_values() -> None:
    got = GitHubEnv.from_env(
        {
            "GITHUB_API_URL": "http://127.0.0.1:9999/api/v3/",
            "GITHUB_SERVER_URL": "https://ghe.example",
            "GITHUB_REPOSITORY": "octo/agent",
            "GITHUB_SHA": "abc",
            "GITHUB_REF": "refs/pull/7/merge",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": "/github/workflow/event.json",
            "GITHUB_RUN_ID": "42",
            "GITHUB_WORKFLOW_REF": "octo/agent/.github/workflows/evals.yml@refs/heads/main",
            "GITHUB_OUTPUT": "/github/file_commands/set_output_1",
            "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary_1",
            "GITHUB_WORKSPACE": "/github/workspace",
        }
    )
    assert got == GitHubEnv(
        api_url="http://127.0.0.1:9999/api/v3",
        server_url="https://ghe.example",
        repository="octo/agent",
        sha="abc",
        ref="refs/pull/7/merge",
        event_name="pull_request",
        event_path="/github/workflow/event.json",
        run_id="42",
        workflow_ref="octo/agent/.github/workflows/evals.yml@refs/heads/main",
        output="/github/file_commands/set_output_1",
        step_summary="/github/file_commands/step_summary_1",
        workspace="/github/workspace",
    )
    assert parse_settings({"GITHUB_REPOSITORY": "octo/agent"}).github.repository == "octo/agent"


def test_a_malformed_repository_is_bad_input() -> None:
    with pytest.raises(InputError, match="GITHUB_REPOSITORY: expected owner/name"):
        GitHubEnv.from_env({"GITHUB_REPOSITORY": "agent"})


def test_the_judges_models_and_calls_and_the_pin_held_to_the_list() -> None:
    base = {"INPUT_AGENT": "agent"}
    settings = parse_settings({**base, "INPUT_JUDGE-MODELS": "my-judge, gemini-2.5-pro\nx"})
    assert settings.judge_models == ("my-judge", "gemini-2.5-pro", "x")
    assert parse_settings(base).judge_models == ()  # the default list (metrics/judge/caps.py)
    assert parse_settings({**base, "INPUT_JUDGE-MAX-CALLS": "0"}).judge_max_calls == 0
    with pytest.raises(InputError, match="input judge-max-calls: "):
        parse_settings({**base, "INPUT_JUDGE-MAX-CALLS": "lots"})
    with pytest.raises(InputError, match='input judge-model: "gemini-9-ultra" is not a model'):
        parse_settings({**base, "INPUT_JUDGE-MODEL": "gemini-9-ultra"})
    pinned = {**base, "INPUT_JUDGE-MODEL": "my-judge", "INPUT_JUDGE-MODELS": "my-judge"}
    assert parse_settings(pinned).judge_model == "my-judge"


def test_the_paired_input_is_still_read_and_the_log_warns_it_is_deprecated() -> None:
    """`paired: true` keeps working for a release (docs/action.md): the setting is parsed
    as before, and the action's log warns once, before anything else can stop the run."""
    import subprocess
    import sys

    from helpers.action_harness import clean_env

    assert parse_settings(env(paired="false")).deprecated == ()
    got = parse_settings(env(paired="true"))
    assert got.paired is True
    (line,) = got.deprecated
    assert line.startswith("the input paired is deprecated") and "statistics.md" in line
    argv = [sys.executable, "-m", "agent_eval_action", "action"]
    done = subprocess.run(  # no event: stops on bad input, after the settings were read
        argv, env={**clean_env(), **env(paired="true")}, capture_output=True, text=True
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.count(f"::warning::{line}") == 1
    quiet = subprocess.run(argv, env=clean_env(), capture_output=True, text=True)
    assert "deprecated" not in quiet.stdout
