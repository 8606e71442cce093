"""The image installs only pinned bytes (docs/security.md, "The image and the release").

constraints.txt chooses every version the image installs; requirements-build.lock (the build
backend) and requirements.lock (the runtime dependencies of `agent-eval-action[adk]`) hold
those versions with their sha256 hashes, written by scripts/image_lock.py; the Dockerfile installs
both with `pip install --require-hashes`, then the tool itself with nothing else, and
scripts/image_venv.py runs the same pip commands, read from the Dockerfile. Each check here
also runs on a broken copy, to show that it fails where it should.
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
import image_lock
import image_venv

CONSTRAINTS = (ROOT / "constraints.txt").read_text(encoding="utf-8")
LOCK = (ROOT / "requirements.lock").read_text(encoding="utf-8")
BUILD_LOCK = (ROOT / "requirements-build.lock").read_text(encoding="utf-8")
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOCKS = {"requirements-build.lock": BUILD_LOCK, "requirements.lock": LOCK}
# What may choose where pip gets a file, or bypass the locks' hashes.
SOURCES = {"-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f", "--find-links"}
SOURCES |= {"--trusted-host", "-e", "--editable"}


def dockerfile_problems(text: str) -> list[str]:
    """What lets the image's install take bytes the locks do not pin, one line each."""
    installs = [a[1:] for a in image_venv.image_installs(text) if a[:1] == ["install"]]
    found = []
    locks = []
    for args in installs:
        words = iter(args)
        positional, files = [], []
        for word in words:
            if word in ("-r", "--requirement"):
                files.append(next(words))
            elif word.split("=", 1)[0] in SOURCES:
                found.append(f"pip install {shlex.join(args)}: {word}")
            elif not word.startswith("-"):
                positional.append(word)
        if files and "--require-hashes" not in args:
            found.append(f"pip install {shlex.join(args)}: no --require-hashes")
        if files and "--no-build-isolation" not in args and files != ["requirements-build.lock"]:
            found.append(f"pip install {shlex.join(args)}: an sdist would build isolated")
        locks += files
        if positional and positional != ["."]:
            found.append(f"pip install {shlex.join(args)}: installs {positional}, not a lock")
        if positional == ["."]:
            missing = {"--no-deps", "--no-index", "--no-build-isolation"} - set(args)
            if missing:
                found.append(f"pip install {shlex.join(args)}: the project without {missing}")
            if files:
                found.append(f"pip install {shlex.join(args)}: the project beside a lock")
    if locks != list(LOCKS):
        found.append(f"installs the locks {locks}, not {list(LOCKS)} in that order")
    if installs and installs[-1][-1:] != ["."]:
        found.append("the project is not installed last, after both locks")
    copied = [line.split()[1:-1] for line in text.splitlines() if line.startswith("COPY ")]
    for name in LOCKS:
        if not any(name in sources for sources in copied):
            found.append(f"{name} is not copied into the image")
    return found


# --- the locks --------------------------------------------------------------------------------


def test_the_locks_are_constraints_versions_each_with_its_hashes():
    assert image_lock.problems(CONSTRAINTS, LOCK, BUILD_LOCK) == []
    for text in LOCKS.values():
        for name, (version, hashes) in image_lock.read_lock(text).items():
            assert hashes, f"{name}=={version} has no hash"
    # every pin of constraints.txt is in one lock, and packaging (wheel's) in both
    locked = {**image_lock.read_lock(LOCK), **image_lock.read_lock(BUILD_LOCK)}
    assert {n: v for n, (v, _) in locked.items()} == image_lock.pins(CONSTRAINTS)


def _without_hashes(text: str, name: str) -> str:
    """The lock with the `--hash` lines of one entry removed (its `\\` too)."""
    block = re.search(rf"^{re.escape(name)}==\S+ \\\n(    --hash=\S+(?: \\)?\n)+", text, re.M)
    assert block, name
    first = block[0].split(" \\\n", 1)[0]
    return text.replace(block[0], first + "\n")


@pytest.mark.parametrize(
    ("lock_text", "build_text", "constraints", "expected"),
    [
        pytest.param(
            _without_hashes(LOCK, "numpy"),
            BUILD_LOCK,
            CONSTRAINTS,
            "requirements.lock: numpy==2.4.6 has no --hash (pip would refuse it)",
            id="an entry without a hash",
        ),
        pytest.param(
            LOCK,
            _without_hashes(BUILD_LOCK, "setuptools"),
            CONSTRAINTS,
            "requirements-build.lock: setuptools==84.2.1 has no --hash (pip would refuse it)",
            id="the build backend without a hash",
        ),
        pytest.param(
            LOCK.replace("\nnumpy==2.4.6 ", "\nnumpy==2.4.7 "),
            BUILD_LOCK,
            CONSTRAINTS,
            "requirements.lock: numpy==2.4.7, constraints.txt pins 2.4.6",
            id="a version constraints.txt does not pin",
        ),
        pytest.param(
            LOCK,
            BUILD_LOCK,
            CONSTRAINTS.replace("\nnumpy==2.4.6\n", "\nnumpy==2.4.5\n"),
            "requirements.lock: numpy==2.4.6, constraints.txt pins 2.4.5",
            id="constraints.txt changed, the lock not written again",
        ),
        pytest.param(
            LOCK,
            BUILD_LOCK,
            CONSTRAINTS + "colorama==0.4.6\n",
            "constraints.txt pins colorama==0.4.6, which no lock has",
            id="a pin no lock has",
        ),
        pytest.param(
            LOCK,
            BUILD_LOCK,
            CONSTRAINTS.replace("\nsix==1.17.0\n", "\n"),
            "requirements.lock: six==1.17.0 is not in constraints.txt",
            id="a locked distribution constraints.txt does not pin",
        ),
        pytest.param(
            LOCK,
            BUILD_LOCK.replace("packaging==26.4 ", "packaging==26.3 "),
            CONSTRAINTS.replace("\npackaging==26.4\n", "\npackaging==26.3\n"),
            "requirements-build.lock: packaging==26.3, the other lock has 26.4",
            id="the two locks disagree",
        ),
        pytest.param(
            LOCK.replace("\nsix==1.17.0 \\\n", "\nsix>=1.16 \\\n"),
            BUILD_LOCK,
            CONSTRAINTS,
            "requirements.lock: six>=1.16: not a requirement pinned as name==version",
            id="a range, not a pin",
        ),
    ],
)
def test_a_lock_that_is_not_constraints_versions_with_hashes_is_refused(
    lock_text, build_text, constraints, expected
):
    found = image_lock.problems(constraints, lock_text, build_text)
    assert any(line.startswith(expected) for line in found), found


def test_the_build_lock_holds_the_build_backend_the_project_asks_for():
    """pip builds the tool (and rouge-score, an sdist) with what requirements-build.lock put
    in place: each of pyproject.toml's [build-system] requires, at a version it accepts."""
    locked = image_lock.read_lock(BUILD_LOCK)
    requires = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    assert {canonicalize_name(r.name) for r in requires} == {"setuptools", "wheel"}
    for requirement in requires:
        version, _ = locked[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(version), f"{requirement}: {version}"


def test_the_runtime_lock_satisfies_what_the_project_requires():
    """Each dependency pyproject.toml names (with the adk extra's) is in requirements.lock,
    at a version in its range: the tool is installed with --no-deps, beside that lock."""
    locked = image_lock.read_lock(LOCK)
    project = PYPROJECT["project"]
    for text in [*project["dependencies"], *project["optional-dependencies"]["adk"]]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in locked, f"requirements.lock has no {name}"
        assert requirement.specifier.contains(locked[name][0], prereleases=True), text


def test_every_lock_says_how_to_write_it_again_and_the_docs_give_that_command():
    header = (
        "# This file was autogenerated by uv via the following command:\n"
        f"#    {image_lock.COMMAND}\n"
    )
    for name, text in LOCKS.items():
        assert text.startswith(header), name
    security = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    contributing = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert f"`{image_lock.COMMAND}`" in security
    assert f"\n{image_lock.COMMAND} " in contributing


# --- the Dockerfile's install -----------------------------------------------------------------


def test_the_image_installs_the_locks_with_hashes_then_the_project_alone():
    assert dockerfile_problems(DOCKERFILE) == []
    installs = image_venv.image_installs(DOCKERFILE)
    assert installs[-1] == ["check"], "pip check: the locks missed no dependency of the tool"


def _replaced(old: str, new: str) -> str:
    assert old in DOCKERFILE, old
    return DOCKERFILE.replace(old, new, 1)


@pytest.mark.parametrize(
    ("dockerfile", "expected"),
    [
        pytest.param(
            _replaced("--require-hashes --no-build-isolation", "--no-build-isolation"),
            "no --require-hashes",
            id="the runtime lock without --require-hashes",
        ),
        pytest.param(
            _replaced(
                "--require-hashes -r /src/requirements-build.lock",
                "-r /src/requirements-build.lock",
            ),
            "no --require-hashes",
            id="the build lock without --require-hashes",
        ),
        pytest.param(
            _replaced(
                "--require-hashes --no-build-isolation --check-build-dependencies -r",
                "--require-hashes -r",
            ),
            "an sdist would build isolated",
            id="rouge-score built by a setuptools pip fetches",
        ),
        pytest.param(
            _replaced("--no-deps --no-index --no-build-isolation", "--no-index"),
            "the project without",
            id="the project's dependencies resolved again",
        ),
        pytest.param(
            _replaced("--check-build-dependencies /src ", '--constraint /src/c.txt "/src[adk]" '),
            "--constraint",
            id="pinned by version, not by bytes",
        ),
        pytest.param(
            _replaced("&& pip check", "&& pip install --no-cache-dir pyyaml \\\n    && pip check"),
            "installs ['pyyaml'], not a lock",
            id="a package from no lock",
        ),
        pytest.param(
            _replaced(
                "pip install --no-cache-dir --require-hashes -r /src/requirements-build.lock \\\n"
                "    && ",
                "",
            ),
            "installs the locks ['requirements.lock']",
            id="the build backend left to chance",
        ),
        pytest.param(
            _replaced("LICENSE requirements-build.lock requirements.lock", "LICENSE"),
            "requirements.lock is not copied into the image",
            id="the lock not copied",
        ),
    ],
)
def test_an_install_that_takes_unpinned_bytes_is_refused(dockerfile, expected):
    found = dockerfile_problems(dockerfile)
    assert any(expected in line for line in found), found


def test_the_image_venv_installs_as_the_image_does():
    """scripts/image_venv.py runs the Dockerfile's own pip commands, the repository's root as
    /src, and rebuilds its venv when one of them or a lock changes."""
    installs = image_venv.image_installs()
    assert not [word for args in installs for word in args if word.startswith("/src")]
    files = [args[args.index("-r") + 1] for args in installs if "-r" in args]
    assert files == list(LOCKS) and all((ROOT / name).is_file() for name in files)
    assert set(LOCKS) <= set(image_venv.INPUTS)
    assert [args[-1] for args in installs if args[0] == "install"][-1] == "."
