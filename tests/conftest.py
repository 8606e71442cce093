"""Fixtures for every test module, and the markers' rules (registered in pyproject.toml).

Plain helpers live in tests/helpers/ (`from helpers.paths import ROOT`); nothing imports
this module. Tiers and how to run them: tests/README.md.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from helpers.paths import SHARED_FIXTURES

ADK_MISSING = "needs google-adk, the adk extra: pip install -e '.[adk]' (or '.[dev]')"


def _adk_installed() -> bool:
    try:
        return importlib.util.find_spec("google.adk") is not None
    except ModuleNotFoundError:  # no `google` namespace at all
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`adk` tests skip, saying why, when google-adk is not installed; except in CI
    (CI=true), which installs the dev extra: there they run, and fail."""
    if _adk_installed() or os.environ.get("CI") == "true":
        return
    skip = pytest.mark.skip(reason=ADK_MISSING)
    for item in items:
        if item.get_closest_marker("adk") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_real_gemini(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches a real Gemini: keys and endpoints set in the shell are removed."""
    for name in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "AGENT_EVAL_JUDGE_PRICES",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def adk_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(
            f"ADK's integration eval files are not present at {SHARED_FIXTURES} (../shared absent)"
        )
    return SHARED_FIXTURES


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write a file below a fresh working directory; dicts/lists are dumped as indented JSON."""
    monkeypatch.chdir(tmp_path)

    def _write(name: str, content) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            text = content if isinstance(content, str) else json.dumps(content, indent=2)
            path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture(scope="session")
def openapi():
    """GitHub's OpenAPI description (.ci/run unpacks it); required when CI=true."""
    from fakes import openapi as spec

    loaded = spec.load()
    if loaded is None:
        reason = f"GitHub's OpenAPI description is absent ({spec.SPEC_PATH}; .ci/run fetches it)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return loaded


@pytest.fixture
def github_fake():
    """A fake GitHub API on 127.0.0.1; checks shapes against OpenAPI when it is present."""
    from fakes import openapi as spec
    from fakes.github import FakeGitHub

    fake = FakeGitHub(spec.load())
    fake.start()
    yield fake
    fake.stop()
    assert not fake.schema_errors, fake.schema_errors


@pytest.fixture
def runner(github_fake, tmp_path: Path):
    """The Actions runner's side of an action run against the fake GitHub (helpers/action_harness.py)."""
    from helpers.action_harness import Runner

    return Runner(github_fake, tmp_path)


@pytest.fixture(scope="session")
def baseline_results(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """main's Results: the example agent without its gold-tier shortcut (every case passes)."""
    from helpers.action_harness import example_results, fixed_agent

    work = tmp_path_factory.mktemp("baseline")
    data = example_results(fixed_agent(work), work)
    assert all(case["status"] == "passed" for case in json.loads(data)["cases"])
    return data


@pytest.fixture(scope="session")
def shipped_results(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The example agent's Results as shipped: its gold-tier case fails."""
    from helpers.action_harness import AGENT, example_results

    data = example_results(AGENT, tmp_path_factory.mktemp("shipped"))
    failing = [c["eval_id"] for c in json.loads(data)["cases"] if c["status"] != "passed"]
    assert failing == ["gold_express_refund"], failing
    return data


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After tests of test_docs_blocks.py ran: how many blocks of docs/ run, and why the
    others do not (helpers/docs_blocks.py). It reads the docs, not the workers' results, so
    it prints under xdist too."""
    ran = any(
        isinstance(report, pytest.TestReport) and "test_docs_blocks.py::" in report.nodeid
        for reports in terminalreporter.stats.values()
        for report in reports
    )
    if ran:
        from helpers.docs_blocks import all_blocks, census

        terminalreporter.write_line(census(all_blocks()[0]))
