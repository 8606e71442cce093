"""The oldest google-adk the `adk` extra allows, in a virtualenv of its own: install, smoke-test.

    python scripts/adk_oldest.py                  # .ci/adk-oldest-venv, reused when still current
    python scripts/adk_oldest.py /tmp/venv --rebuild
    python scripts/adk_oldest.py --adk 1.35.0     # try another release (a throwaway venv)

The `adk` extra (pyproject.toml) allows google-adk from its lower bound up to the next major
release. The newest end is the image's (constraints.txt), tested by scripts/image_venv.py
and by the whole test suite; this tests the oldest end, the extra's `>=` bound, as a user
who has that release gets it:

- `pip install --constraint <the tool's own pins> ".[adk]" "google-adk==<bound>"`, where the
  tool's own pins are constraints.txt's lines for the packages pyproject.toml itself names
  (its dependencies and the adk extra, google-adk excepted). Whatever else that google-adk
  needs resolves as it would for a user (1.x needs older OpenTelemetry than the image's,
  for one);
- the ADK example run with `--agent` and scored (`agent-eval-action run
  examples/customer_support/evals --agent examples/customer_support`): it must give the
  documented result (6 cases, 5 passed, gold_damaged_refund failed, exit 1) and record
  that google-adk release in the Results' `adk_version`.

Choosing the bound: the oldest release for which both steps pass (`--adk X` tries one).
Reuse as scripts/image_venv.py: the venv is kept with a stamp of the Python version,
pyproject.toml, constraints.txt and the release; while it matches, only the project itself
is reinstalled.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from image_venv import EXAMPLES, _check_results, _pip, _python, base_python, fingerprint
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VENV = ROOT / ".ci" / "adk-oldest-venv"
STAMP = ".adk-oldest-stamp.json"
ADK = "google-adk"


def _log(message: str) -> None:
    print(f"adk-oldest: {message}", file=sys.stderr, flush=True)


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _adk_requirement() -> Requirement:
    for text in _project()["optional-dependencies"]["adk"]:
        requirement = Requirement(text)
        if canonicalize_name(requirement.name) == ADK:
            return requirement
    raise SystemExit("adk-oldest: pyproject.toml's adk extra names no google-adk")


def oldest() -> str:
    """The extra's lower bound: the X of its `google-adk>=X`."""
    bounds = [s.version for s in _adk_requirement().specifier if s.operator == ">="]
    if len(bounds) != 1:
        raise SystemExit("adk-oldest: the adk extra's google-adk has no single `>=` bound")
    return bounds[0]


def tool_pins() -> str:
    """constraints.txt's pins of the packages pyproject.toml names (google-adk excepted)."""
    project = _project()
    named = {
        canonicalize_name(Requirement(text).name)
        for text in [*project["dependencies"], *project["optional-dependencies"]["adk"]]
    } - {ADK}
    pins = []
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name = canonicalize_name(Requirement(line).name)
            if name in named:
                pins.append(line)
                named.discard(name)
    if named:
        raise SystemExit(f"adk-oldest: constraints.txt does not pin {', '.join(sorted(named))}")
    return "".join(f"{pin}\n" for pin in pins)


def ensure(venv: Path, release: str, rebuild: bool = False) -> bool:
    """Create or refresh the venv with google-adk==release; return whether it was reused."""
    digest = hashlib.sha256(f"{fingerprint()} {release}".encode()).hexdigest()
    stamp = venv / STAMP
    reused = (
        not rebuild
        and _python(venv).exists()
        and stamp.exists()
        and json.loads(stamp.read_text()).get("fingerprint") == digest
    )
    started = time.perf_counter()
    if reused:
        _log(f"reusing {venv} (google-adk {release}); reinstalling the project only")
        _pip(venv, "install", "--no-deps", "--force-reinstall", ".")
    else:
        _log(f"creating {venv} with google-adk=={release} beside the tool's own pins")
        if venv.exists():
            shutil.rmtree(venv)
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([base_python(), "-m", "venv", str(venv)], check=True)
        with tempfile.TemporaryDirectory() as tmp:
            pins = Path(tmp) / "tool-pins.txt"
            pins.write_text(tool_pins(), encoding="utf-8")
            _pip(venv, "install", "--constraint", str(pins), ".[adk]", f"{ADK}=={release}")
        stamp.write_text(json.dumps({"fingerprint": digest}))
    subprocess.run([str(_python(venv)), "-m", "pip", "check"], check=True, stdout=sys.stderr)
    _log(f"venv ready in {time.perf_counter() - started:.0f} s")
    return reused


def smoke(venv: Path, release: str) -> None:
    """The ADK example, loaded, run with --agent and scored; raise if anything is off."""
    evals, runner, failing = next(e for e in EXAMPLES if "--agent" in e[1](_python(venv)))
    entry = venv / "bin" / "agent-eval-action"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        argv = [str(entry), "run", evals, *runner(_python(venv)), "--out", str(out)]
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        problem = _check_results(out, done.returncode, failing)
        if problem is None:
            recorded = json.loads(out.read_text())["adk_version"]
            if recorded is None or Version(recorded) != Version(release):
                problem = f"the Results record google-adk {recorded}, expected {release}"
        if problem:
            raise SystemExit(
                f"adk-oldest: `{shlex.join(argv)}` with google-adk {release}: {problem}\n"
                f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            )
    _log(f"google-adk {release}: the ADK example ran and scored as documented (5 of 6 passed)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--rebuild", action="store_true", help="recreate the venv")
    parser.add_argument("--adk", help="this google-adk release instead of the extra's bound")
    args = parser.parse_args()
    release = args.adk or oldest()
    venv = args.venv.resolve()
    ensure(venv, release, args.rebuild)
    smoke(venv, release)


if __name__ == "__main__":
    main()
