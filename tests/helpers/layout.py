"""GitHub's container layout, for the tests that attack the action as the PR's code.

As a container action runs: the action as root, from the image's entry point (the
Dockerfile's ENTRYPOINT, the image's virtualenv: helpers/paths.image_entrypoint), with no
PYTHONPATH of ours; the workspace and the file-command files owned by the runner's user
(uid 1001), mode 0644/0755, the current folder the workspace (`docker run -w`); a HOME
(`/github/home`) earlier steps may write; a checkout credential in RUNNER_TEMP (0600) and
in the workspace's .git/config; a Docker socket; and a folder only root may enter, where
nothing of the PR's may ever land.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent_eval_action.action.children import FILE_COMMANDS
from helpers.action_harness import Runner, pr_payload
from helpers.paths import IMAGE_PYTHON, image_entrypoint, need_isolation
from helpers.pid1 import as_pid1, can_unshare

RUNNER_UID = 1001  # GitHub's runner user: owns the workspace and the file-command files
HI_CASE = {
    "eval_id": "probe",
    "conversation": [
        {
            "user_content": {"role": "user", "parts": [{"text": "hello"}]},
            "final_response": {"role": "model", "parts": [{"text": "hi"}]},
        }
    ],
}


@dataclass
class Layout:
    base: Path
    workspace: Path
    file_commands: Path
    home: Path
    runner_temp: Path
    out: Path  # an output-dir outside the workspace
    root_only: Path  # 0700, root's: what lands here came through a link of the PR's
    credential: Path
    docker: Path

    def commands(self) -> dict[str, Path]:
        return {name: self.file_commands / name.lower() for name in FILE_COMMANDS}

    def give_to_runner(self) -> None:
        """Every file the test put in the workspace, HOME and RUNNER_TEMP: the runner's."""
        for top in (self.workspace, self.file_commands, self.home, self.runner_temp):
            for folder, dirs, files in os.walk(top):
                _own(Path(folder), 0o755)
                for name in files + [d for d in dirs if (Path(folder) / d).is_symlink()]:
                    path = Path(folder) / name
                    if path.is_symlink():
                        os.lchown(path, RUNNER_UID, RUNNER_UID)
                    else:
                        _own(path, 0o644)
        _own(self.credential, 0o600)

    def run(
        self,
        runner: Runner,
        *,
        env: dict[str, str] | None = None,
        timeout: float = 300,
        pid1: bool = False,
        **inputs: str,
    ) -> subprocess.CompletedProcess[str]:
        """The action as the image runs it, in the workspace, on PR #7, the PR's agent the
        workspace's probe.py; `inputs` add to or replace the action's inputs. `pid1`: as
        PID 1 of a PID namespace of its own, as in its container, where this machine allows
        it (helpers/pid1.py), else as a child of this process. Its stderr ends with the
        largest peak memory of any of its processes and what they wrote: `peak_kb`,
        `written_kb`."""
        head = "e" * 40
        runner.fake.add_pull(7, head, "d" * 40)
        defaults = {
            "evals": "evals",
            "command": f"{IMAGE_PYTHON} probe.py",
            "baseline": "none",
            "output-dir": str(self.out),
        }
        environment = runner.env("pull_request", pr_payload(7, head, "d" * 40), **defaults)
        environment.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
        environment.update(
            {name: str(path) for name, path in self.commands().items()},
            GITHUB_WORKSPACE=str(self.workspace),
            HOME=str(self.home),
            RUNNER_TEMP=str(self.runner_temp),
            PATH=f"{IMAGE_PYTHON.parent}:/usr/local/bin:/usr/bin:/bin",
        )
        environment.pop("PYTHONPATH", None)
        environment.update(env or {})
        self.give_to_runner()
        argv = [*image_entrypoint(), "action"]
        if pid1 and can_unshare():
            argv = as_pid1(argv)
        return subprocess.run(
            [sys.executable, "-I", "-c", MEASURED, *argv],  # isolated: nothing of the PR's
            cwd=self.workspace,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


# runs its arguments, then says the peak memory of the largest of its processes and the
# blocks they wrote, all of them (each waited for by its parent, as every process of the
# action's is): its children's ru_maxrss and ru_oublock
MEASURED = r"""
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"peak-kb={used.ru_maxrss} written-kb={used.ru_oublock // 2}", file=sys.stderr)
sys.exit(code)
"""


def peak_kb(done: subprocess.CompletedProcess[str]) -> int:
    """The peak memory (kB) of the largest process of a `Layout.run`."""
    return int(done.stderr.rsplit("peak-kb=", 1)[1].split()[0])


def written_kb(done: subprocess.CompletedProcess[str]) -> int:
    """What the processes of a `Layout.run` wrote to disk (kB, 512-byte blocks halved)."""
    return int(done.stderr.rsplit("written-kb=", 1)[1].split()[0])


def _own(path: Path, mode: int) -> None:
    os.chown(path, RUNNER_UID, RUNNER_UID)
    path.chmod(mode)


@contextmanager
def github_layout(probe: str, cases: list[dict] | None = None) -> Iterator[Layout]:
    """The layout with `probe` as the workspace's probe.py (the PR's agent, speaking the
    runner protocol) and `cases` (default: one case expecting "hi") in evals/."""
    need_isolation()
    base = Path(tempfile.mkdtemp(prefix="agent-eval-layout-"))
    base.chmod(0o755)
    names = ("workspace", "file_commands", "home", "runner_temp", "out", "root_only")
    paths = {name: base / name for name in names}
    for path in paths.values():
        path.mkdir()
    paths["root_only"].chmod(0o700)
    workspace = paths["workspace"]
    (workspace / "evals").mkdir()
    (workspace / "evals" / "probe.evalset.json").write_text(
        json.dumps({"eval_set_id": "probe", "eval_cases": cases or [HI_CASE]})
    )
    (workspace / "probe.py").write_text(probe)
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text(
        '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n'
    )
    credential = paths["runner_temp"] / "git-credentials-1.config"
    credential.write_text("[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n")
    for name in FILE_COMMANDS:
        (paths["file_commands"] / name.lower()).write_text("")
    docker = socket.socket(socket.AF_UNIX)
    docker.bind(str(base / "docker.sock"))
    docker.listen(1)
    (base / "docker.sock").chmod(0o660)  # root and the docker group, as on a runner
    layout = Layout(base=base, credential=credential, docker=base / "docker.sock", **paths)
    layout.give_to_runner()
    try:
        yield layout
    finally:
        docker.close()
        shutil.rmtree(base, ignore_errors=True)


def answering(text: str, before: str = "") -> str:
    """A probe that runs `before` (Python), then answers every turn with `text`."""
    return before + ANSWER.replace("ANSWER_TEXT", json.dumps(text))


ANSWER = r"""
import json, sys

for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "end":
        continue
    answer = {"role": "model", "parts": [{"text": ANSWER_TEXT}]}
    print(json.dumps({"id": message["id"], "final_response": answer}), flush=True)
"""
