"""The image's hash-locked requirements, written from constraints.txt.

    python scripts/image_lock.py          # rewrite requirements.lock and requirements-build.lock

The Docker image installs only pinned bytes (docs/security.md): every distribution from a
lock file that pins it with `==` and lists the sha256 of each file PyPI serves for that
version, installed with `pip install --require-hashes`. constraints.txt chooses the versions,
as before; this writes them, with their hashes, into two locks:

- requirements-build.lock: the build backend, pyproject.toml's [build-system] requires and
  what it needs (setuptools, wheel, packaging), installed first;
- requirements.lock: the runtime dependencies of `agent-eval-action[adk]`, installed next
  without build isolation, so the one sdist among them (rouge-score) is built by that
  backend rather than by one pip would fetch, unhashed, for an isolated build.

Each is `uv pip compile --generate-hashes` (uv from the dev extra; PyPI must be reachable)
for the image's platform: CPython 3.11 on x86_64 Linux, glibc 2.36 or later (CI's Debian 12
and the image's Debian 13). uv lists the hashes of every file of the pinned version (the
other platforms' wheels, the sdist); pip installs one of them and refuses any other bytes.
Nothing is upgraded: a lock's versions must be exactly constraints.txt's, else this stops
naming the difference (a package constraints.txt does not pin, for one) and writes nothing.
tests/test_image_lock.py checks the same on every run, offline.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"
LOCK = ROOT / "requirements.lock"
BUILD_LOCK = ROOT / "requirements-build.lock"
COMMAND = "python scripts/image_lock.py"  # what each lock's header says to run
# The image's platform, for uv's resolution (markers, which files exist).
PLATFORM = ("--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_36")

_ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)$")
_HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")


def _log(message: str) -> None:
    print(f"image-lock: {message}", file=sys.stderr, flush=True)


def pins(text: str) -> dict[str, str]:
    """A pin file's `name==version` lines (comments and blank lines skipped), by
    canonical name."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        requirement = Requirement(line)
        specs = list(requirement.specifier)
        if len(specs) != 1 or specs[0].operator != "==":
            raise ValueError(f"{line!r} is not pinned with ==")
        out[canonicalize_name(requirement.name)] = specs[0].version
    return out


def read_lock(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """A lock's requirements: canonical name -> (version, its sha256 hashes).

    Raises ValueError on a requirement that is not `name==version`, on an option that is not
    a sha256 hash, and on a name given twice: what pip's hash-checking mode would refuse, or
    what would make the lock say two things."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        logical.append(line)
    joined = "\n".join(logical).replace("\\\n", " ")
    for line in joined.splitlines():
        words = line.split()
        entry = _ENTRY.match(words[0])
        if not entry:
            raise ValueError(f"{words[0]}: not a requirement pinned as name==version")
        bad = [w for w in words[1:] if not _HASH.match(w)]
        if bad:
            raise ValueError(f"{words[0]}: {bad[0]!r} is not a --hash=sha256:<64 hex> option")
        name = canonicalize_name(entry["name"])
        if name in out:
            raise ValueError(f"{words[0]}: {name} is locked twice")
        hashes = tuple(w.removeprefix("--hash=sha256:") for w in words[1:])
        out[name] = (entry["version"], hashes)
    return out


def problems(constraints: str, lock: str, build_lock: str) -> list[str]:
    """What makes the locks not constraints.txt's versions with their hashes, one line each;
    none when they agree."""
    found: list[str] = []
    try:
        pinned = pins(constraints)
    except ValueError as err:
        return [f"constraints.txt: {err}"]
    locked: dict[str, str] = {}
    unread = False
    for label, text in (("requirements.lock", lock), ("requirements-build.lock", build_lock)):
        try:
            entries = read_lock(text)
        except ValueError as err:
            found.append(f"{label}: {err}")
            unread = True
            continue
        if not entries:
            found.append(f"{label}: locks nothing")
        for name, (version, hashes) in entries.items():
            if not hashes:
                found.append(f"{label}: {name}=={version} has no --hash (pip would refuse it)")
            if name not in pinned:
                found.append(f"{label}: {name}=={version} is not in constraints.txt")
            elif version != pinned[name]:
                found.append(f"{label}: {name}=={version}, constraints.txt pins {pinned[name]}")
            if locked.setdefault(name, version) != version:
                found.append(f"{label}: {name}=={version}, the other lock has {locked[name]}")
    for name in [] if unread else sorted(set(pinned) - set(locked)):
        found.append(f"constraints.txt pins {name}=={pinned[name]}, which no lock has")
    return found


def build_requires() -> list[str]:
    """pyproject.toml's [build-system] requires, as written."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(project["build-system"]["requires"])


def _uv() -> str:
    try:
        from uv import find_uv_bin  # the dev extra's uv
    except ImportError:
        found = shutil.which("uv")
        if found:
            return found
        raise SystemExit(
            'image-lock: uv is not installed: python -m pip install -e ".[dev]"'
        ) from None
    return find_uv_bin()


def compile_locks(out: Path) -> None:
    """Write both locks into the folder out, by uv, from the repository's files."""
    uv = [_uv(), "pip", "compile", "--quiet", "--generate-hashes", *PLATFORM]
    uv += ["--custom-compile-command", COMMAND, "--constraint", "constraints.txt"]
    runs = [
        subprocess.run(
            [*uv, "--extra", "adk", "--output-file", str(out / LOCK.name), "pyproject.toml"],
            cwd=ROOT,
        ),
        subprocess.run(
            [*uv, "--output-file", str(out / BUILD_LOCK.name), "-"],
            cwd=ROOT,
            input="".join(f"{r}\n" for r in build_requires()),
            text=True,
        ),
    ]
    if any(run.returncode for run in runs):
        raise SystemExit("image-lock: uv pip compile failed (above); nothing written")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="image-lock-") as tmp:
        out = Path(tmp)
        compile_locks(out)
        lock, build_lock = ((out / p.name).read_text(encoding="utf-8") for p in (LOCK, BUILD_LOCK))
        found = problems(CONSTRAINTS.read_text(encoding="utf-8"), lock, build_lock)
        if found:
            raise SystemExit(
                "image-lock: the locks would not be constraints.txt's versions; nothing written:\n  "
                + "\n  ".join(found)
            )
        LOCK.write_text(lock, encoding="utf-8")
        BUILD_LOCK.write_text(build_lock, encoding="utf-8")
    counts = [len(read_lock(text)) for text in (lock, build_lock)]
    _log(f"wrote {LOCK.name} ({counts[0]} distributions), {BUILD_LOCK.name} ({counts[1]})")


if __name__ == "__main__":
    main()
