"""The action's Docker image, as a virtualenv: install, smoke-test, measure.

    python scripts/image_venv.py                  # .ci/image-venv, reused when still current
    python scripts/image_venv.py /tmp/venv --rebuild
    python scripts/image_venv.py --json           # the figures as one JSON object

There is no Docker engine on the developers' machines or in CI, so this runs the pip
commands of the Dockerfile's RUN line that installs the tool, read from the Dockerfile
(`image_installs`), in a virtualenv, the repository's root as the image's /src: the build
backend from requirements-build.lock, then the dependencies from requirements.lock, both
hash-checked (`--require-hashes`), then the project itself (`--no-deps`, not editable: the
package is copied into site-packages, as in the image), then `pip check`. Then it runs the
installed entry point the way the image's ENTRYPOINT would:

- `agent-eval-action --version`;
- `run examples/evals --command "<venv python> examples/agent/support_agent.py"` (the
  framework-free example, examples/README.md);
- `run examples/customer_support/evals --agent examples/customer_support` (the ADK example:
  google-adk from the `adk` extra, as locked by requirements.lock);
- `action`, the image's own command, on a workflow_dispatch event (mode run, no token);

and checks that each example gives its documented result: 6 cases, 5 passed, the one that
fails on purpose failed, exit code 1 (the gate fails on that case's threshold).

Reuse: the venv is kept with a stamp of the Python version, pyproject.toml, constraints.txt,
the two locks and the Dockerfile's pip commands; while the stamp matches, only the project
itself is reinstalled (the last install command, with `--force-reinstall`, seconds). Any
change to those rebuilds it.

Sizes, from the installed distributions' RECORD files (every file each one installed,
measured on disk, .pyc files included): the closure of `agent-eval-action[adk]` (what the
image adds to python:3.11-slim, but pip), the closure of `agent-eval-action` alone (the same
image without google-adk and what only it pulls in), and the whole site-packages (those
plus the venv's own pip). Computing "without google-adk" from the RECORDs of one venv needs
no second install, and it is what a `pip install .` venv would hold, since the lock pins
every shared dependency to the same version either way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VENV = ROOT / ".ci" / "image-venv"
STAMP = ".image-venv-stamp.json"
# The files the venv is installed from (with the Dockerfile's pip commands: fingerprint).
INPUTS = ("pyproject.toml", "constraints.txt", "requirements-build.lock", "requirements.lock")

# (eval path, runner arguments given the venv's python, the case that fails on purpose)
EXAMPLES = (
    (
        "examples/evals",
        lambda python: ["--command", f"{shlex.quote(str(python))} examples/agent/support_agent.py"],
        "gold_express_refund",
    ),
    (
        "examples/customer_support/evals",
        lambda python: ["--agent", "examples/customer_support"],
        "gold_damaged_refund",
    ),
)
EXPECTED_CASES, EXPECTED_PASSED = 6, 5

# Run by the venv's python: sizes of site-packages and of the two dependency closures.
_SIZES = r"""
import json, os, sys, sysconfig
from importlib import metadata
try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pip always vendors it
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name

site = sysconfig.get_paths()["purelib"]
dists = {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions(path=[site])}

def files(dist):
    out = set()
    for f in dist.files or ():
        p = os.path.realpath(dist.locate_file(f))
        if os.path.isfile(p):
            out.add(p)
    return out

def closure(name, extras):
    seen, todo = set(), [(canonicalize_name(name), frozenset(extras))]
    while todo:
        name, extras = todo.pop()
        key = (name, extras)
        if key in seen or name not in dists:
            continue
        seen.add(key)
        for text in dists[name].requires or ():
            req = Requirement(text)
            if req.marker and not any(
                req.marker.evaluate({"extra": e}) for e in (extras or {""})
            ):
                continue
            todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}

def size(names):
    paths = set()
    for n in names:
        paths |= files(dists[n])
    return sum(os.path.getsize(p) for p in paths)

total = 0
for top, _, names in os.walk(site):
    for n in names:
        p = os.path.join(top, n)
        if not os.path.islink(p):
            total += os.path.getsize(p)
core = closure("agent-eval-action", ())
full = closure("agent-eval-action", ("adk",))
json.dump({
    "site_packages_bytes": total,
    "with_adk_bytes": size(full),
    "without_adk_bytes": size(core),
    "with_adk_distributions": len(full),
    "without_adk_distributions": len(core),
    "google_adk_bytes": size({"google-adk"}) if "google-adk" in dists else 0,
    "largest": sorted(((size({n}), n) for n in full), reverse=True)[:8],
}, sys.stdout)
"""


def _log(message: str) -> None:
    print(f"image-venv: {message}", file=sys.stderr, flush=True)


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, check=True, **kwargs)


def base_python() -> str:
    """The interpreter the venv is made from: the system's Python 3.11 where there is one
    (as the image's /usr/local/bin/python, readable by every user, which the PR user that
    runs the agent needs: docs/security.md), else this one."""
    system = Path("/usr/bin/python3.11")
    return os.environ.get("IMAGE_VENV_PYTHON") or (
        str(system) if system.exists() else sys.executable
    )


def image_installs(dockerfile: str | None = None) -> list[list[str]]:
    """The pip commands of the Dockerfile's RUN line that installs the tool, each as its
    arguments after `pip`, in order, with the image's /src taken as the repository root
    (`/src/requirements.lock` -> `requirements.lock`, `/src` -> `.`); its other commands
    (`rm -rf /src`) are left out. `dockerfile`: the Dockerfile's text, else it is read."""
    if dockerfile is None:
        dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    for line in dockerfile.replace("\\\n", " ").splitlines():
        if not line.startswith("RUN ") or "pip install" not in line:
            continue
        commands: list[list[str]] = [[]]
        for word in shlex.split(line.removeprefix("RUN ")):
            if word == "&&":
                commands.append([])
            else:
                commands[-1].append(word)
        return [[_local(word) for word in words[1:]] for words in commands if words[:1] == ["pip"]]
    raise SystemExit("image-venv: the Dockerfile has no RUN line with `pip install`")


def _local(word: str) -> str:
    if word == "/src":
        return "."
    return word.removeprefix("/src/")


def fingerprint() -> str:
    digest = hashlib.sha256(f"{base_python()} {platform.python_version()}".encode())
    for name in INPUTS:
        digest.update(b"\0" + (ROOT / name).read_bytes())
    digest.update(b"\0" + json.dumps(image_installs()).encode())
    return digest.hexdigest()


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _pip(venv: Path, *args: str) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    _run([str(_python(venv)), "-m", "pip", "-qq", *args], env=env)


def _install(venv: Path, args: list[str], *more: str) -> None:
    """One of the Dockerfile's `pip install` commands; pip's cache is used here (the image
    keeps none: --no-cache-dir only spares its size)."""
    _pip(venv, *[a for a in args if a != "--no-cache-dir"], *more)


def ensure(venv: Path, rebuild: bool = False) -> dict:
    """Create or refresh the venv; return what was done and how long it took."""
    started = time.perf_counter()
    stamp = venv / STAMP
    current = fingerprint()
    reused = (
        not rebuild
        and _python(venv).exists()
        and stamp.exists()
        and json.loads(stamp.read_text()).get("fingerprint") == current
    )
    installs = [args for args in image_installs() if args[:1] == ["install"]]
    if reused:
        _log(f"reusing {venv}; reinstalling the project only")
        _install(venv, installs[-1], "--force-reinstall")
    else:
        _log(f"creating {venv} (the Dockerfile's pip commands: the locks, then the project)")
        if venv.exists():
            shutil.rmtree(venv)
        venv.parent.mkdir(parents=True, exist_ok=True)
        _run([base_python(), "-m", "venv", str(venv)])
        # The Dockerfile's RUN line, with the repository root as /src.
        for args in installs:
            _install(venv, args)
        stamp.write_text(json.dumps({"fingerprint": current}))
    # any conflict is printed (to stderr: stdout may be --json) and fails the step
    _run([str(_python(venv)), "-m", "pip", "check"], stdout=sys.stderr)
    return {"reused": reused, "install_s": time.perf_counter() - started}


def smoke(venv: Path) -> dict:
    """Run the installed entry point as the image does; raise if an example is off."""
    entry = venv / "bin" / "agent-eval-action"
    version = _run([str(entry), "--version"], capture_output=True, text=True).stdout.strip()
    _log(f"{version}")
    seconds = {}
    # Only the venv's bin on PATH, as in the image, where nothing else is installed.
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    for evals, runner, failing in EXAMPLES:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "results.json"
            argv = [str(entry), "run", evals, *runner(_python(venv)), "--out", str(out)]
            argv += ["--format", "summary"]
            started = time.perf_counter()
            done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
            seconds[evals] = time.perf_counter() - started
            problem = _check_results(out, done.returncode, failing)
            if problem:
                raise SystemExit(
                    f"image-venv: `{shlex.join(argv)}`: {problem}\n"
                    f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
                )
            _log(f"run {evals}: {EXPECTED_PASSED} of {EXPECTED_CASES} passed, as documented")
    seconds["action"] = smoke_action(venv, env)
    return {"version": version, "run_s": seconds}


def entrypoint(venv: Path) -> list[str]:
    """The Dockerfile's ENTRYPOINT, its interpreter the venv's: the image's command line."""
    for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if line.startswith("ENTRYPOINT "):
            argv = json.loads(line.removeprefix("ENTRYPOINT "))
            return [str(_python(venv)) if argv[0].endswith("/python") else argv[0], *argv[1:]]
    raise SystemExit("image-venv: the Dockerfile has no ENTRYPOINT line")


def smoke_action(venv: Path, env: dict[str, str]) -> float:
    """The image's own command line (its ENTRYPOINT, then `action`), as the runner starts
    it: a workflow_dispatch without a PR (mode run), no token, so no GitHub API is needed."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "event.json").write_text('{"inputs": {}}', encoding="utf-8")
        runner_env = {
            k: v for k, v in env.items() if not k.startswith(("GITHUB_", "INPUT_", "ACTIONS_"))
        }
        runner_env.update(
            GITHUB_ACTIONS="true",
            GITHUB_EVENT_NAME="workflow_dispatch",
            GITHUB_EVENT_PATH=str(work / "event.json"),
            GITHUB_REPOSITORY="octo/demo",
            GITHUB_OUTPUT=str(work / "output"),
            GITHUB_STEP_SUMMARY=str(work / "summary"),
            **{
                "INPUT_AGENT": "examples/customer_support",
                "INPUT_EVALS": "examples/customer_support/evals",
                "INPUT_OUTPUT-DIR": str(work / "out"),
            },
        )
        started = time.perf_counter()
        done = subprocess.run(
            [*entrypoint(venv), "action"], cwd=ROOT, env=runner_env, capture_output=True, text=True
        )
        elapsed = time.perf_counter() - started
        problem = _check_results(
            work / "out" / "results.json", done.returncode, "gold_damaged_refund"
        )
        outputs = (work / "output").read_text() if (work / "output").exists() else ""
        if problem is None and "verdict<<" not in outputs:
            problem = "wrote no step outputs"
        if problem:
            raise SystemExit(
                f"image-venv: `agent-eval-action action`: {problem}\n"
                f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            )
        _log("action (workflow_dispatch, mode run): results, outputs and summary written")
    return elapsed


def _check_results(out: Path, code: int, failing: str) -> str | None:
    if code != 1:
        return f"exit code {code}, expected 1 (one case fails on purpose)"
    if not out.exists():
        return "wrote no results file"
    cases = json.loads(out.read_text())["cases"]
    passed = [c["eval_id"] for c in cases if c["status"] == "passed"]
    failed = [c["eval_id"] for c in cases if c["status"] != "passed"]
    if len(cases) != EXPECTED_CASES or len(passed) != EXPECTED_PASSED or failed != [failing]:
        return f"{len(cases)} cases, passed {passed}, not passed {failed}; expected {failing} alone to fail"
    return None


def sizes(venv: Path) -> dict:
    done = _run([str(_python(venv)), "-c", _SIZES], capture_output=True, text=True)
    return json.loads(done.stdout)


def measure(venv: Path = DEFAULT_VENV, rebuild: bool = False, run: bool = True) -> dict:
    figures = {"venv": str(venv), "python": platform.python_version()}
    figures |= ensure(venv, rebuild)
    if run:
        figures |= smoke(venv)
    figures |= sizes(venv)
    return figures


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def describe(f: dict) -> list[tuple[str, str]]:
    adk_only = f["with_adk_bytes"] - f["without_adk_bytes"]
    return [
        (
            "site-packages, all (the image's additions + the venv's pip)",
            _mb(f["site_packages_bytes"]),
        ),
        (
            f"agent-eval-action[adk] and its dependencies ({f['with_adk_distributions']} distributions)",
            _mb(f["with_adk_bytes"]),
        ),
        (
            f"the same without google-adk ({f['without_adk_distributions']} distributions)",
            _mb(f["without_adk_bytes"]),
        ),
        ("of which google-adk and what only it needs", _mb(adk_only)),
        ("of which google-adk alone", _mb(f["google_adk_bytes"])),
        ("largest", ", ".join(f"{name} {_mb(n)}" for n, name in f["largest"][:5])),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--rebuild", action="store_true", help="recreate the venv")
    parser.add_argument("--no-run", action="store_true", help="skip the smoke runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.venv.resolve(), args.rebuild, not args.no_run)
    if args.json:
        print(json.dumps(figures))
        return
    how = "reused" if figures["reused"] else "built"
    print(f"image venv {figures['venv']} ({how} in {figures['install_s']:.0f} s)")
    for what, value in describe(figures):
        print(f"  {what}: {value}")


if __name__ == "__main__":
    main()
