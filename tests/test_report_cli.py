"""`compare --format markdown|summary` and `run --baseline --format markdown` on the example."""

from __future__ import annotations

import sys

import pytest
from helpers.paths import ROOT, python_command

from agent_eval_action.cli import main

sys.path.insert(0, str(ROOT / "scripts"))
from example_results import AGENT, make


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    return make(tmp_path_factory.mktemp("example"))


def test_compare_prints_the_comment_for_the_example(example, capsys):
    base, current = example
    argv = ["compare", "--baseline", str(base), "--current", str(current)]
    assert main([*argv, "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("<!-- agent-eval-action:agent-eval -->\n### ❌ 1 trajectory regression")
    assert "<code>support / gold\\_express\\_refund</code><br>new failure · lucky answer" in out
    assert '- lookup_order({"order_id": "A-3090"})' in out
    assert "https://github.com/example/support-agent/actions/runs/9100200300" in out
    # `compare` reads files: each side says its file, the current one "its run", not "this run"
    (current_line,) = [line for line in out.splitlines() if line.startswith("**Current:**")]
    assert "(the file <code>" in current_line and "[its run](" in current_line
    assert "this run" not in out and "before the current Results" in out
    assert "on <code>main</code> (the file <code>" in out


def test_compare_summary_and_check_name(example, capsys, tmp_path):
    base, current = example
    argv = ["compare", "--baseline", str(base), "--current", str(current), "--format", "summary"]
    assert main([*argv, "--check-name", "nightly", "--out", str(tmp_path / "s.md")]) == 1
    text = (tmp_path / "s.md").read_text()
    assert "<!--" not in text and "check <code>nightly</code>" in text
    assert main([*argv[:-1], "markdown", "--check-name", "nightly"]) == 1
    assert capsys.readouterr().out.startswith("<!-- agent-eval-action:nightly -->")


def test_run_with_a_baseline_prints_the_comment(example, capsys, tmp_path, monkeypatch):
    base, _ = example
    monkeypatch.chdir(ROOT)
    argv = ["run", "examples/evals", "--command", python_command(AGENT)]
    out_file = str(tmp_path / "r.json")
    code = main([*argv, "--baseline", str(base), "--format", "markdown", "--out", out_file])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("<!-- agent-eval-action:agent-eval -->")
    assert "lucky answer" in out and "case  " not in out  # no results table before it
    # the baseline is its commit and its file; the current side is this run (no commit here)
    assert "**Current:** this run · check" in out and "(the file <code>" in out
    assert main([*argv, "--format", "summary", "--out", out_file]) == 1
    out = capsys.readouterr().out
    assert "**No baseline:** no --baseline was given" in out and "<!--" not in out
