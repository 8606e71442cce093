"""The agent's requirements (input `requirements`), installed as the PR's user before
anything of the PR's runs (docs/action.md, Runtime)."""

from __future__ import annotations

import os
import re
import tomllib
from importlib import metadata
from pathlib import Path

from .. import launch
from ..errors import InputError
from ..files import read_text, write_whole
from . import outputs
from .children import Cancelled, Children, child_environment
from .sandbox import PrUser
from .settings import Settings


def install_requirements(
    settings: Settings,
    children: Children,
    user: PrUser,
    given: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, str]:
    """Install the agent's requirements as the PR user, into its scratch folder, before
    anything runs; return what the agent stage's environment adds to find them. What root
    writes for pip to read (the requirements of a pyproject.toml, the constraints) goes in
    `given`, a folder of root's the PR's user may read and not write.

    A `--command` agent gets a virtualenv of its own, with whatever pins it asks for (its
    `python` on PATH is the venv's). Any other agent runs in the tool's own interpreter, so
    its requirements go to a folder the agent stage puts on its sys.path
    (launch.AGENT_PATH_ENV), constrained to the versions the tool runs with (google-adk
    excepted): a pin that would replace one of the tool's own dependencies is bad input
    naming the package. A pyproject.toml installs its [project.dependencies]. pip runs in
    `cwd` (local paths in the requirements are below it; default: this process's) with
    `env` (default: the PR user's environment)."""
    if settings.requirements is None:
        return {}
    path = Path(settings.requirements)
    requirements = _requirements_file(path, given)
    who = "the PR's user" if env is None else "the user of main's code"
    env = env if env is not None else user.environment(child_environment())
    outputs.say(f"installing the agent's requirements from {path} as {who}")
    tail: list[str] = []
    if settings.agent_input == "command":
        venv = user.scratch / "venv"
        made = launch.python_module("venv", str(venv))
        code = children.call(launch.Kind.PYTHON, made, env, user=user, cwd=cwd)
        if code == 0:
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-r", str(requirements)]
            code = children.call(launch.Kind.PR, pip, env, user=user, tail=tail, cwd=cwd)
        added = {
            "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv),
        }
    else:
        target, constraints = user.scratch / "site", _constraints(given)
        argv = launch.python_module("pip", "install", "--target", str(target))
        argv += ["--constraint", str(constraints), "-r", str(requirements)]
        code = children.call(launch.Kind.PYTHON, argv, env, user=user, tail=tail, cwd=cwd)
        added = {launch.AGENT_PATH_ENV: str(target)}
    if children.cancelled:
        raise Cancelled("cancelled while installing requirements")
    if code != 0:
        raise InputError(f"input requirements: {_why_pip_failed(tail, code)}", file=path)
    return added


def _requirements_file(path: Path, given: Path) -> Path:
    """The requirements as a pip requirements file (a pyproject.toml's dependencies), read
    as every input file is (files/reading.py: never through a link of the checkout's)."""
    if path.name != "pyproject.toml":
        if not path.is_file():
            raise InputError("input requirements: no such file", file=path)
        return path.absolute()  # read by pip, as the PR's user
    try:
        project = tomllib.loads(read_text(path, str(path))).get("project", {})
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"input requirements: cannot read it: {err}", file=path) from None
    except InputError as err:
        raise InputError(f"input requirements: {err.message}", file=path) from None
    dependencies = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
        raise InputError("input requirements: no [project] dependencies list", file=path)
    out = given / "requirements.txt"
    write_whole(out, "".join(f"{d}\n" for d in dependencies))
    out.chmod(0o644)
    return out


def _constraints(given: Path) -> Path:
    """Every distribution the tool runs with, pinned, except google-adk (an agent may need
    another release of it)."""
    pins = sorted(
        {
            f"{d.metadata['Name']}=={d.version}"
            for d in metadata.distributions()
            if d.metadata["Name"] and d.metadata["Name"].lower().replace("_", "-") != "google-adk"
        }
    )
    out = given / "constraints.txt"
    write_whole(out, "".join(f"{pin}\n" for pin in pins))
    out.chmod(0o644)
    return out


_CONFLICT = re.compile(r"The user requested \(constraint\) ([A-Za-z0-9_.\-]+)")


def _why_pip_failed(tail: list[str], code: int) -> str:
    """One line: which of the tool's own packages a pin conflicts with, else pip's error."""
    conflicts = sorted({m.group(1) for line in tail for m in [_CONFLICT.search(line)] if m})
    if conflicts:
        return (
            f"it pins {', '.join(conflicts)} to another version than the tool runs with "
            "(give the agent those versions, or run it as a --command agent with a venv of its own)"
        )
    errors = [line.strip() for line in tail if line.strip().startswith("ERROR:")]
    return f"pip install failed (exit {code}){': ' + errors[-1] if errors else ''}"
