"""The action's settings, parsed once from the environment (docs/action.md, "Inputs").

Every input of action.yml arrives as `INPUT_<NAME-UPPERCASED>` with its hyphens kept
(`num-runs` -> `INPUT_NUM-RUNS`); an empty value means the input's default. Each input has
one `clean_<name>` function here that turns the string into a typed value or raises a
one-line InputError naming the input. The `GITHUB_*` values the action needs are read here
too: nothing else in the package reads them from os.environ.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from ..core import Axis, TrajectoryPolicy, parse_trajectory_policy
from ..errors import InputError
from ..github.baseline import HISTORY, MAX_HISTORY
from ..github.env import GitHubEnv
from ..pipeline.options import DEFAULTS, GateOptions
from ..report.quiet import CommentWhen, parse_comment_when

MODES = ("auto", "run", "compare", "comment", "merge")

# The default of every action input that has one, as action.yml declares it (a test keeps
# the two equal). The options the CLI shares take theirs from pipeline/options.py.
ACTION_DEFAULTS: dict[str, str] = {
    "evals": "evals",
    "num-runs": str(DEFAULTS.run.num_runs),
    "concurrency": str(DEFAULTS.run.concurrency),
    "confirm-runs": str(DEFAULTS.run.confirm_runs),
    "confirm-limit": str(DEFAULTS.run.confirm_limit),
    "baseline-runs": str(DEFAULTS.run.baseline_runs),
    "paired": str(DEFAULTS.run.paired).lower(),
    "history": str(HISTORY),
    "mode": "auto",
    "baseline": "artifact",
    "baseline-artifact": "agent-eval-results",
    "fail-on": ",".join(DEFAULTS.gate.fail_on),
    "comment": CommentWhen.ALWAYS.value,
    "check-name": DEFAULTS.report.check_name,
    "output-dir": "agent-eval-results",
    "accept-label": "agent-eval:accept",
    "allow-fork-dispatch": "false",
    "strip-thoughts": str(DEFAULTS.run.strip_thoughts).lower(),
    "judge-max-calls": str(DEFAULTS.run.judge_max_calls),
    "tools-from-eval-file": str(DEFAULTS.run.tools_from_eval_file).lower(),
    "replay-tools": str(DEFAULTS.run.replay_tools).lower(),
    "replay-strict": str(DEFAULTS.run.replay_strict).lower(),
    "github-token": "${{ github.token }}",
}
BASELINE_KINDS = ("artifact", "branch", "none")
AGENT_INPUTS = ("agent", "command", "adk-api", "adk-history")


def _bad(name: str, reason: str) -> InputError:
    from ..files.jsonpos import one_line  # a value quoted in the reason stays on one line

    return InputError(one_line(f"input {name}: {reason}"))


def _whole(name: str, text: str, default: int, least: int = 1) -> int:
    """A whole number of at least `least`; the default when the input is empty."""
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise _bad(name, f"must be a whole number of at least {least}, got {text!r}")
    return value


def _optional(text: str) -> str | None:
    return text or None


def _words(name: str, text: str) -> tuple[str, ...]:
    """Several values in one input: separated by spaces or newlines, quoted as in a shell."""
    try:
        return tuple(shlex.split(text))
    except ValueError as err:
        raise _bad(name, f"cannot split {text!r} into paths: {err}") from None


def clean_evals(text: str) -> tuple[str, ...]:
    return _words("evals", text) or (str(ACTION_DEFAULTS["evals"]),)


def clean_agent(text: str) -> str | None:
    return _optional(text)


def clean_command(text: str) -> str | None:
    if not text:
        return None
    try:
        shlex.split(text)
    except ValueError as err:
        raise _bad("command", f"cannot split {text!r} like a shell would: {err}") from None
    return text


@dataclass(frozen=True)
class AdkApi:
    url: str
    app: str


def clean_adk_api(text: str) -> AdkApi | None:
    """`URL APP`: the server of `adk api_server` and the agent's app name on it (there is no
    adk-app input (docs/action.md), so the one input carries both, as `--adk-api URL --adk-app APP`)."""
    if not text:
        return None
    parts = text.split()
    if len(parts) != 2:
        raise _bad(
            "adk-api",
            f"must be 'URL APP' (e.g. 'http://127.0.0.1:8000 my_agent'), got {text!r}",
        )
    url, app = parts
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.netloc:
        raise _bad("adk-api", f"{url!r} is not an http:// or https:// URL")
    return AdkApi(url=url.rstrip("/"), app=app)


def clean_adk_history(text: str) -> tuple[str, ...] | None:
    return _words("adk-history", text) or None


def clean_config(text: str) -> str | None:
    return _optional(text)


def clean_num_runs(text: str) -> int:
    return _whole("num-runs", text, DEFAULTS.run.num_runs)


def clean_concurrency(text: str) -> int:
    return _whole("concurrency", text, DEFAULTS.run.concurrency)


def clean_confirm_runs(text: str) -> int:
    return _whole("confirm-runs", text, DEFAULTS.run.confirm_runs, least=0)


def clean_confirm_limit(text: str) -> int:
    return _whole("confirm-limit", text, DEFAULTS.run.confirm_limit, least=0)


def clean_baseline_runs(text: str) -> int:
    """Main's sampling on a push (compare/confirm.to_sample); 0 and 1 turn it off."""
    return max(1, _whole("baseline-runs", text, DEFAULTS.run.baseline_runs, least=0))


def clean_paired(text: str) -> bool:
    """Paired runs on the merge-base's code (pipeline/paired.py)."""
    return _boolean("paired", text, DEFAULTS.run.paired)


def clean_history(text: str) -> int:
    value = _whole("history", text, HISTORY, least=0)
    if value > MAX_HISTORY:
        raise _bad("history", f"must be at most {MAX_HISTORY}, got {value}")
    return value


def clean_trajectory_policy(text: str) -> TrajectoryPolicy | None:
    if not text:
        return None
    try:
        return parse_trajectory_policy(text)
    except ValueError as err:
        raise _bad("trajectory-policy", str(err)) from None


def clean_mode(text: str) -> Literal["auto", "run", "compare", "comment", "merge"]:
    if not text:
        return "auto"  # ACTION_DEFAULTS["mode"]
    if text not in MODES:
        raise _bad("mode", f"must be one of {', '.join(MODES)}, got {text!r}")
    return text  # type: ignore[return-value]


@dataclass(frozen=True)
class BaselineInput:
    """Where the baseline Results come from: a workflow artifact from the base branch, a run
    on the base branch, no baseline, or a Results file (`kind == "path"`)."""

    kind: Literal["artifact", "branch", "none", "path"]
    path: str | None = None


def clean_baseline(text: str) -> BaselineInput:
    if not text:
        return BaselineInput("artifact")
    if text in BASELINE_KINDS:
        return BaselineInput(text)  # type: ignore[arg-type]
    return BaselineInput("path", text)


def clean_baseline_artifact(text: str) -> str:
    return text or str(ACTION_DEFAULTS["baseline-artifact"])


def clean_baseline_workflow(text: str) -> str | None:
    return _optional(text)


def clean_baseline_branch(text: str) -> str | None:
    """None: the repository's default branch (known from the event or the API, later)."""
    return _optional(text)


def clean_fail_on(text: str) -> tuple[str, ...]:
    from ..compare.policy import parse_fail_on

    try:
        return tuple(parse_fail_on(text or ",".join(DEFAULTS.gate.fail_on)))
    except InputError as err:
        raise _bad("fail-on", err.message.removeprefix("--fail-on: ")) from None


def clean_min_delta(text: str) -> tuple[tuple[Axis | None, float], ...]:
    """`[AXIS=]X` items as `--min-delta` takes them, separated by commas or spaces."""
    from ..compare.policy import parse_min_delta

    items = text.replace(",", " ").split()
    try:
        return tuple(parse_min_delta(item) for item in items)
    except ValueError as err:
        raise _bad("min-delta", str(err)) from None


def clean_comment(text: str) -> CommentWhen:
    """When the sticky comment is posted (report/quiet.py); true and false stay accepted."""
    if not text:
        return CommentWhen(ACTION_DEFAULTS["comment"])
    try:
        return parse_comment_when(text)
    except ValueError as err:
        raise _bad("comment", str(err)) from None


def _boolean(name: str, text: str, default: bool) -> bool:
    if not text:
        return default
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise _bad(name, f"must be true or false, got {text!r}")
    return lowered == "true"


def clean_check_name(text: str) -> str:
    return text or DEFAULTS.report.check_name


def clean_output_dir(text: str) -> str:
    return text or str(ACTION_DEFAULTS["output-dir"])


def clean_shard(text: str) -> tuple[int, int] | None:
    if not text:
        return None
    from ..pipeline.shard import parse_shard

    try:
        return parse_shard(text)
    except ValueError as err:
        raise _bad("shard", str(err).removeprefix("--shard: ")) from None


def clean_judge_model(text: str) -> str | None:
    return _optional(text)


def clean_judge_models(text: str) -> tuple[str, ...]:
    """The judge's allow-list, separated by commas or spaces (empty: the default list)."""
    models = [name for word in _words("judge-models", text) for name in word.split(",") if name]
    return tuple(models) or DEFAULTS.run.judge_models


def clean_judge_max_calls(text: str) -> int:
    return _whole("judge-max-calls", text, DEFAULTS.run.judge_max_calls, least=0)


def clean_requirements(text: str) -> str | None:
    """A pip requirements file of the agent (`pip install -r`), installed before running."""
    return _optional(text)


def clean_timeout(text: str) -> float:
    if not text:
        return DEFAULTS.run.timeout_s
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise _bad("timeout", f"must be a positive number of seconds, got {text!r}")
    return value


def clean_initial_session(text: str) -> str | None:
    """ADK's initial_session_file for the legacy row files (checked when the suite loads)."""
    return _optional(text)


def clean_strip_thoughts(text: str) -> bool:
    return _boolean("strip-thoughts", text, DEFAULTS.run.strip_thoughts)


def clean_tools_from_eval_file(text: str) -> bool:
    return _boolean("tools-from-eval-file", text, DEFAULTS.run.tools_from_eval_file)


def clean_replay_tools(text: str) -> bool:
    return _boolean("replay-tools", text, DEFAULTS.run.replay_tools)


def clean_replay_strict(text: str) -> bool:
    return _boolean("replay-strict", text, DEFAULTS.run.replay_strict)


def clean_budgets(text: str) -> tuple[tuple[str, float], ...]:
    """`METRIC=MAX` items as `--budget` takes them, separated by commas or spaces; a metric
    named twice keeps its last budget."""
    from ..metrics.efficiency import parse_budget

    budgets: dict[str, float] = {}
    for item in text.replace(",", " ").split():
        try:
            name, value = parse_budget(item)
        except ValueError as err:
            raise _bad("budgets", str(err)) from None
        budgets[name] = value
    return tuple(budgets.items()) or DEFAULTS.run.budgets


def clean_accept_label(text: str) -> str:
    return text or str(ACTION_DEFAULTS["accept-label"])


def clean_allow_fork_dispatch(text: str) -> bool:
    """A workflow_dispatch with a pr-number may run a fork's PR head (action/dispatch.py)."""
    return _boolean("allow-fork-dispatch", text, False)


def clean_github_token(text: str) -> str | None:
    return _optional(text)


def clean_judge_api_key(text: str) -> str | None:
    """A Gemini key for the LLM judge alone: given only to the score stage."""
    return _optional(text)


# Every input of action.yml, in its order, with its clean function.
CLEANERS: dict[str, Callable[[str], object]] = {
    "evals": clean_evals,
    "agent": clean_agent,
    "command": clean_command,
    "adk-api": clean_adk_api,
    "adk-history": clean_adk_history,
    "config": clean_config,
    "num-runs": clean_num_runs,
    "concurrency": clean_concurrency,
    "confirm-runs": clean_confirm_runs,
    "confirm-limit": clean_confirm_limit,
    "baseline-runs": clean_baseline_runs,
    "paired": clean_paired,
    "history": clean_history,
    "trajectory-policy": clean_trajectory_policy,
    "mode": clean_mode,
    "baseline": clean_baseline,
    "baseline-artifact": clean_baseline_artifact,
    "baseline-workflow": clean_baseline_workflow,
    "baseline-branch": clean_baseline_branch,
    "fail-on": clean_fail_on,
    "min-delta": clean_min_delta,
    "comment": clean_comment,
    "check-name": clean_check_name,
    "output-dir": clean_output_dir,
    "shard": clean_shard,
    "judge-model": clean_judge_model,
    "judge-models": clean_judge_models,
    "judge-max-calls": clean_judge_max_calls,
    "requirements": clean_requirements,
    "timeout": clean_timeout,
    "initial-session": clean_initial_session,
    "strip-thoughts": clean_strip_thoughts,
    "tools-from-eval-file": clean_tools_from_eval_file,
    "replay-tools": clean_replay_tools,
    "replay-strict": clean_replay_strict,
    "budgets": clean_budgets,
    "accept-label": clean_accept_label,
    "allow-fork-dispatch": clean_allow_fork_dispatch,
    "github-token": clean_github_token,
    "judge-api-key": clean_judge_api_key,
}


@dataclass(frozen=True)
class Settings:
    evals: tuple[str, ...]
    agent: str | None
    command: str | None
    adk_api: AdkApi | None
    adk_history: tuple[str, ...] | None
    config: str | None
    num_runs: int
    concurrency: int
    confirm_runs: int
    confirm_limit: int
    baseline_runs: int
    paired: bool
    history: int
    trajectory_policy: TrajectoryPolicy | None
    mode: Literal["auto", "run", "compare", "comment", "merge"]
    baseline: BaselineInput
    baseline_artifact: str
    baseline_workflow: str | None
    baseline_branch: str | None
    fail_on: tuple[str, ...]
    min_delta: tuple[tuple[Axis | None, float], ...]
    comment: CommentWhen
    check_name: str
    output_dir: str
    shard: tuple[int, int] | None
    judge_model: str | None
    judge_models: tuple[str, ...]
    judge_max_calls: int
    requirements: str | None
    timeout: float
    initial_session: str | None
    strip_thoughts: bool
    tools_from_eval_file: bool
    replay_tools: bool
    replay_strict: bool
    budgets: tuple[tuple[str, float], ...]
    accept_label: str
    allow_fork_dispatch: bool
    github_token: str | None = field(repr=False)  # a secret: never in a repr or a log
    judge_api_key: str | None = field(default=None, repr=False)  # a secret too
    github: GitHubEnv = field(default_factory=GitHubEnv)

    @property
    def deprecated(self) -> tuple[str, ...]:
        """What the inputs set that goes in the next minor release, one line each: the
        action's log says it as a warning, and the Results' warnings keep it."""
        from ..pipeline.paired import DEPRECATED

        return (DEPRECATED.format(what="the input paired"),) if self.paired else ()

    @property
    def gate(self) -> GateOptions:
        return GateOptions(fail_on=self.fail_on, min_delta=self.min_delta)

    @property
    def agent_input(self) -> str | None:
        """Which of the agent inputs is set (at most one, checked at parse time)."""
        for name in AGENT_INPUTS:
            if getattr(self, name.replace("-", "_")) is not None:
                return name
        return None

    def require_agent(self) -> str:
        """The agent input, for the modes that run the evals."""
        name = self.agent_input
        if name is None:
            raise InputError(f"running the evals needs one of the inputs {', '.join(AGENT_INPUTS)}")
        return name


def input_env_name(name: str) -> str:
    """The environment variable the runner sets for an input: hyphens are kept."""
    return f"INPUT_{name.replace(' ', '_').upper()}"


def parse_settings(env: Mapping[str, str]) -> Settings:
    """All the action's settings from the environment, each input checked once."""
    values = {
        name.replace("-", "_"): clean(env.get(input_env_name(name), "").strip())
        for name, clean in CLEANERS.items()
    }
    given = [name for name in AGENT_INPUTS if values[name.replace("-", "_")] is not None]
    if len(given) > 1:
        raise InputError(
            f"inputs {' and '.join(given)}: give only one of {', '.join(AGENT_INPUTS)}"
        )
    if values["judge_model"] is not None:  # the pin is held to the allow-list too
        from ..metrics.judge.caps import allowed_judge_models, judge_model_refusal

        allowed = allowed_judge_models(values["judge_models"])  # type: ignore[arg-type]
        why = judge_model_refusal(values["judge_model"], allowed)  # type: ignore[arg-type]
        if why is not None:
            raise _bad("judge-model", why)
    if (values["tools_from_eval_file"] or values["replay_tools"]) and values["agent"] is None:
        raise InputError(
            "inputs tools-from-eval-file and replay-tools answer the tool calls of an ADK agent "
            "run in-process: they need the input agent"
        )
    if values["replay_strict"] and not (values["tools_from_eval_file"] or values["replay_tools"]):
        raise InputError("input replay-strict goes with tools-from-eval-file or replay-tools")
    return Settings(**values, github=GitHubEnv.from_env(env))  # type: ignore[arg-type]
