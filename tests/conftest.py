from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "adk-integration"
WORKERS = Path(__file__).resolve().parent / "workers"


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


def python_command(script: Path, *args: str) -> str:
    """A --command string running a script with this interpreter."""
    import shlex

    return shlex.join([sys.executable, str(script), *args])


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
