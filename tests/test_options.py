"""Every default is declared once (pipeline/options.py, and the action-only ones in
action/settings.py): the CLI's flags, the action's settings and action.yml agree with it."""

from __future__ import annotations

from pathlib import Path

import yaml

from agent_eval_action.action.settings import ACTION_DEFAULTS, parse_settings
from agent_eval_action.cli import build_parser
from agent_eval_action.pipeline.options import DEFAULTS, GateOptions

ROOT = Path(__file__).resolve().parent.parent


def test_action_yml_declares_the_defaults_the_settings_use() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    declared = {n: spec["default"] for n, spec in action["inputs"].items() if "default" in spec}
    assert declared == ACTION_DEFAULTS


def test_empty_inputs_give_the_declared_defaults() -> None:
    settings = parse_settings({"INPUT_AGENT": "agent"})
    assert settings.num_runs == DEFAULTS.run.num_runs
    assert settings.concurrency == DEFAULTS.run.concurrency
    assert settings.timeout == DEFAULTS.run.timeout_s
    assert settings.fail_on == DEFAULTS.gate.fail_on
    assert settings.check_name == DEFAULTS.report.check_name
    assert settings.evals == (ACTION_DEFAULTS["evals"],)
    assert settings.output_dir == ACTION_DEFAULTS["output-dir"]
    assert settings.accept_label == ACTION_DEFAULTS["accept-label"]
    assert settings.strip_thoughts == DEFAULTS.run.strip_thoughts
    assert settings.budgets == DEFAULTS.run.budgets
    assert settings.initial_session == DEFAULTS.run.initial_session
    assert settings.paired == DEFAULTS.run.paired
    assert settings.tools_from_eval_file == DEFAULTS.run.tools_from_eval_file
    assert settings.replay_tools == DEFAULTS.run.replay_tools
    assert settings.replay_strict == DEFAULTS.run.replay_strict


def test_the_cli_flags_default_to_the_same_options() -> None:
    parser = build_parser()
    for argv in (["run", "e.json", "--command", "x"], ["score", "e.json", "--traces", "t"]):
        args = parser.parse_args(argv)
        assert args.num_runs == DEFAULTS.run.num_runs
        assert args.concurrency == DEFAULTS.run.concurrency
        assert args.timeout == DEFAULTS.run.timeout_s
        assert args.fail_on == ",".join(DEFAULTS.gate.fail_on)
        assert args.check_name == DEFAULTS.report.check_name
        assert args.strip_thoughts == DEFAULTS.run.strip_thoughts
        assert tuple(args.budget) == DEFAULTS.run.budgets
        assert args.initial_session == DEFAULTS.run.initial_session
    for command in ("run", "run-cases"):
        extra = ["--traces", "t"] if command == "run-cases" else []
        args = parser.parse_args([command, "e.json", "--agent", "a", *extra])
        assert args.tools_from_eval_file == DEFAULTS.run.tools_from_eval_file
        assert args.replay_tools == DEFAULTS.run.replay_tools
        assert args.replay_strict == DEFAULTS.run.replay_strict
    run = parser.parse_args(["run", "e.json", "--command", "x"])
    assert (run.paired is not None) == DEFAULTS.run.paired  # --paired REF turns it on
    args = parser.parse_args(["compare", "--baseline", "b", "--current", "c"])
    assert args.fail_on == ",".join(DEFAULTS.gate.fail_on)


def test_min_delta_items_resolve_per_axis_the_last_one_winning() -> None:
    options = GateOptions(min_delta=((None, 0.2), ("response", 0.05)))
    assert options.deltas() == {"trajectory": 0.2, "response": 0.05}
    assert GateOptions().deltas() == {}
    assert options.recording().fail_on == ("never",)
