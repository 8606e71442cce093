"""The published package, installed as a user installs it: build, install in a fresh venv, run.

    python scripts/wheel_smoke.py                 # build the wheel, then smoke-test it
    python scripts/wheel_smoke.py --wheel dist/agent_eval_action-0.1.0-py3-none-any.whl

What `pip install "agent-eval-action[adk]"` gives a user, tested away from the source tree:

1. build the sdist and the wheel as the release does (`python -m build`: the wheel is built
   from the sdist, so a file the sdist leaves out is missing here too), from a copy of
   pyproject.toml, README.md and src/ (the shared tree gets no build/ or egg-info);
2. a fresh virtualenv every time (a reused one could hide a dependency the wheel no longer
   declares), into which pip installs `"<wheel>[adk]"` with every dependency, under the
   repository's constraints.txt (the image's versions: pip's cache serves them, quickly);
3. from a scratch directory that holds only a copy of examples/, and with no PYTHONPATH:
   `agent-eval-action --version` must say pyproject.toml's version, the package must be
   imported from the venv, and README's quickstart command (its `agent-eval-action run ...`)
   must give the documented result: 6 cases, 5 passed, the one that fails on purpose
   failed, exit code 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

from image_venv import _check_results

ROOT = Path(__file__).resolve().parent.parent
FAILING = "gold_damaged_refund"  # the case of README's quickstart that fails on purpose


def _log(message: str) -> None:
    print(f"wheel-smoke: {message}", file=sys.stderr, flush=True)


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]


def quickstart_command() -> list[str]:
    """README's quickstart `agent-eval-action run ...`, as words (the program first)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Quickstart\n(.*?)^## ", text, re.S | re.M)
    block = re.search(r"```sh\n(.*?)```", section[1], re.S) if section else None
    for line in block[1].splitlines() if block else ():
        for command in line.split("&&"):
            words = shlex.split(command)
            if words[:2] == ["agent-eval-action", "run"]:
                return words
    raise SystemExit("wheel-smoke: README.md's Quickstart has no `agent-eval-action run` command")


def build(out: Path) -> Path:
    """Build the sdist and, from it, the wheel; return the wheel."""
    with tempfile.TemporaryDirectory(prefix="wheel-src-") as tmp:
        src = Path(tmp)
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy2(ROOT / name, src / name)
        shutil.copytree(
            ROOT / "src",
            src / "src",
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.tmp"),
        )
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(out), str(src)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"wheel-smoke: python -m build failed\n{done.stdout}{done.stderr}")
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"wheel-smoke: the build made {len(wheels)} wheels, expected 1")
    with zipfile.ZipFile(wheels[0]) as built:
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in built.namelist()):
            raise SystemExit("wheel-smoke: the wheel carries no LICENSE (pyproject license-files)")
    _log(f"built {wheels[0].name} in {time.perf_counter() - started:.0f} s")
    return wheels[0]


def install(wheel: Path, venv: Path) -> Path:
    """A fresh venv with `<wheel>[adk]` and all its dependencies; return its bin folder."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = [str(python), "-m", "pip", "-qq"]
    constraints = str(ROOT / "constraints.txt")
    subprocess.run(
        # --no-compile: no .pyc files written ahead (Python compiles what it imports)
        [*pip, "install", "--no-compile", "--constraint", constraints, f"{wheel}[adk]"],
        check=True,
        env=env,
    )
    subprocess.run([*pip, "check"], check=True, env=env, stdout=sys.stderr)
    _log(f"installed {wheel.name}[adk] in a fresh venv in {time.perf_counter() - started:.0f} s")
    return venv / "bin"


def smoke(bin_dir: Path) -> None:
    """--version, where the package comes from, and README's quickstart, outside the tree."""
    entry = bin_dir / "agent-eval-action"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    with tempfile.TemporaryDirectory(prefix="wheel-smoke-") as tmp:
        work = Path(tmp)
        shutil.copytree(
            ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__")
        )

        def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)

        version = run([str(entry), "--version"])
        expected = f"agent-eval-action {project_version()}"
        if version.returncode != 0 or version.stdout.strip() != expected:
            raise SystemExit(
                f"wheel-smoke: `agent-eval-action --version` said {version.stdout.strip()!r} "
                f"(exit {version.returncode}), expected {expected!r}\n{version.stderr}"
            )
        where = run(
            [
                str(bin_dir / "python"),
                "-c",
                "import agent_eval_action; print(agent_eval_action.__file__)",
            ]
        )
        origin = Path(where.stdout.strip()).resolve()
        if not origin.is_relative_to(bin_dir.parent.resolve()):
            raise SystemExit(f"wheel-smoke: the package was imported from {origin}, not the venv")
        _log(f"{expected}, imported from the venv")

        out = work / "results.json"
        argv = [str(entry), *quickstart_command()[1:], "--out", str(out)]
        done = run(argv)
        problem = _check_results(out, done.returncode, FAILING)
        if problem:
            raise SystemExit(
                f"wheel-smoke: `{shlex.join(argv)}`: {problem}\n"
                f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            )
        _log("README's quickstart: 5 of 6 cases passed, the one failing on purpose failed, exit 1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="smoke-test this wheel instead of building")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wheel-") as tmp:
        wheel = args.wheel.resolve() if args.wheel else build(Path(tmp) / "dist")
        smoke(install(wheel, Path(tmp) / "venv"))


if __name__ == "__main__":
    main()
