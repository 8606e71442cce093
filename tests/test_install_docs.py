"""How the tool is installed, as README, docs/install.md and docs/action.md say it, against
what is tested: the quickstart's two commands (a user's install, a contributor's), the
command scripts/wheel_smoke.py runs on the built wheel, the google-adk range of the `adk`
extra (its oldest end, scripts/adk_oldest.py) and the image's google-adk (constraints.txt).
The scripts themselves run in .ci/run; the release's build is tested in test_workflows.py.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib

import pytest
from helpers.paths import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

sys.path.insert(0, str(ROOT / "scripts"))
import adk_oldest
import wheel_smoke

README = (ROOT / "README.md").read_text(encoding="utf-8")
ACTION_DOC = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
INSTALL_DOC = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
CONSTRAINTS = (ROOT / "constraints.txt").read_text(encoding="utf-8")


def quickstart_lines() -> list[str]:
    section = re.search(r"^## Quickstart\n(.*?)^## ", README, re.S | re.M)
    assert section, "README.md has no Quickstart section"
    block = re.search(r"```sh\n(.*?)```", section[1], re.S)
    assert block, "README.md's Quickstart has no sh block"
    return block[1].splitlines()


def image_adk() -> str:
    [pin] = re.findall(r"^google-adk==(\S+)$", CONSTRAINTS, re.M)
    return pin


def test_the_quickstart_is_a_users_command_then_a_contributors():
    user, contributor = quickstart_lines()
    install, run = (shlex.split(part) for part in user.split("&&"))
    assert install == ["pip", "install", ".[adk]"], "a user needs the adk extra alone"
    assert run[:2] == ["agent-eval-action", "run"] and "--agent" in run
    install, tests = (shlex.split(part) for part in contributor.split("&&"))
    assert install == ["pip", "install", "-e", ".[adk,dev]"]
    # .ci/run ends with this exact command
    assert shlex.join(tests) == "python -m pytest -n auto"
    assert "\npython -m pytest -n auto\n" in (ROOT / ".ci" / "run").read_text()


def test_the_wheel_smoke_runs_the_quickstarts_evaluation():
    words = wheel_smoke.quickstart_command()
    assert words == shlex.split(quickstart_lines()[0].split("&&")[1])
    evals, agent = words[2], words[words.index("--agent") + 1]
    assert (ROOT / evals).is_dir() and (ROOT / agent / "agent.py").is_file()


def test_the_git_install_line_names_the_same_extra_and_a_commit():
    """Nothing is released yet: README installs the tool from a commit of this repository,
    with the same extra as the quickstart, and says that the `uses:` lines of the other
    pages are placeholders; docs/install.md gives the same line."""
    (line,) = [ln for ln in README.splitlines() if ln.startswith("pip install") and "git+" in ln]
    (spec,) = shlex.split(line)[2:]
    requirement = Requirement(spec)
    assert requirement.name == "agent-eval-action" and requirement.extras == {"adk"}
    assert requirement.url == "git+https://github.com/<owner>/agent-eval-action@<sha>"
    assert "`<owner>/agent-eval-action@<sha>`" in README  # the same pin for `uses:`
    assert (
        "`org/agent-eval-action@v1`, in the `uses:` lines under docs/ and examples/, "
        "is a placeholder" in README
    )
    assert f"\n{line}\n" in INSTALL_DOC


@pytest.mark.parametrize("text", [README, INSTALL_DOC], ids=["README.md", "docs/install.md"])
def test_the_docs_say_the_adk_range_that_is_tested(text):
    oldest = adk_oldest.oldest()
    assert oldest == "1.36"
    assert f"google-adk {oldest} and every later 1.x and 2.x" in text
    excluded = [
        s.version.removesuffix(".*")
        for s in adk_oldest._adk_requirement().specifier
        if s.operator == "!="
    ]
    assert excluded == sorted(excluded) and f"({' and '.join(excluded)} excepted" in text
    assert f"{oldest}.0 (`scripts/adk_oldest.py`) and the image's {image_adk()}" in text


@pytest.mark.parametrize(
    "text",
    [README, ACTION_DOC, INSTALL_DOC],
    ids=["README.md", "docs/action.md", "docs/install.md"],
)
def test_the_docs_name_the_images_google_adk(text):
    assert f"google-adk {image_adk()}" in text
    assert "Linux runners only" in text and "Python 3.11" in text


def test_the_oldest_venv_pins_the_tools_own_packages_only():
    """Beside the oldest google-adk, the tool's own dependencies keep the image's versions;
    what only google-adk needs (1.x wants an older OpenTelemetry) resolves freely."""
    pins = adk_oldest.tool_pins().splitlines()
    assert set(pins) <= set(CONSTRAINTS.splitlines())
    names = {canonicalize_name(Requirement(p).name) for p in pins}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {
        canonicalize_name(Requirement(r).name)
        for r in [*project["dependencies"], *project["optional-dependencies"]["adk"]]
    }
    assert names == declared - {"google-adk"}
    assert "opentelemetry-api" not in names and "google-genai" in names
