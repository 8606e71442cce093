"""The PR's code cannot reach the action's token or the runner's files (docs/security.md).

An agent that tries every road we know of runs through the image's entry point, as root (as
a container action runs), in GitHub's layout (helpers/layout.py): the workspace and the
file-command files owned by the runner's user (uid 1001), mode 0644; a HOME it may not
write; a checkout credential in RUNNER_TEMP (0600) and in the workspace's .git/config; a
Docker socket. The action runs from the image's virtualenv (scripts/image_venv.py, built
from a Python every user may read, holding this tree's package).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.action_harness import TOKEN, Runner, pr_payload
from helpers.layout import RUNNER_UID, Layout, github_layout
from helpers.paths import IMAGE_PACKAGE, ISOLATED, ROOT

from agent_eval_action.action.workdirs import private_parent

pytestmark = [pytest.mark.e2e, ISOLATED]

PROBE = r"""
import json, os, socket, subprocess, sys

plan = json.load(open("probe.json"))


def attempt(action):
    try:
        action()
        return "DONE"
    except Exception as err:
        return f"blocked: {type(err).__name__}"


def environ_with_token():
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if plan["token"].encode() in open(f"/proc/{entry}/environ", "rb").read():
                    found.append(int(entry))
            except OSError:
                pass
    return found


def ancestors():
    # each process up the tree: its uid, and whether its environment could be read
    found, pid = [], os.getppid()
    while pid > 1:
        status = open(f"/proc/{pid}/status").read().splitlines()
        uid = int(next(x for x in status if x.startswith("Uid:")).split()[1])
        found.append([uid, attempt(lambda: open(f"/proc/{pid}/environ", "rb").read())])
        pid = int(next(x for x in status if x.startswith("PPid:")).split()[1])
    return found


def append(path):
    return lambda: open(path, "a").write("PWNED=1\n")


def docker():
    client = socket.socket(socket.AF_UNIX)
    client.connect(plan["docker"])


report = {
    "uid": os.getuid(),
    "gid": os.getgid(),
    "groups": os.getgroups(),
    "home": os.environ.get("HOME"),
    "tmpdir": os.environ.get("TMPDIR"),
    "token_in": environ_with_token(),
    "ancestors": ancestors(),
    "file_commands": {p: attempt(append(p)) for p in plan["file_commands"]},
    "templates": {p: attempt(append(p)) for p in plan["templates"]},
    "docker": attempt(docker),
    "runner_temp_credential": attempt(lambda: open(plan["credential"]).read()),
    "workspace": attempt(lambda: open("pwned.txt", "w").write("x")),
    "home_outside": attempt(lambda: open(os.path.join(plan["home"], "pwned"), "w")),
}
daemon = subprocess.Popen(["setsid", "sleep", "300"], stdout=subprocess.DEVNULL)
report["daemon"] = daemon.pid
# a daemon that detaches: its shell exits at once, and it is orphaned
detach = "setsid sleep 300 >/dev/null 2>&1 & echo $!"
detached = int(subprocess.run(["sh", "-c", detach], capture_output=True, text=True).stdout)
status = open(f"/proc/{detached}/status").read().splitlines()
report["detached"] = [detached, int(next(x for x in status if x.startswith("PPid:")).split()[1])]
report["stage"] = os.getppid()
print("::set-output name=verdict::pass", file=sys.stderr, flush=True)
print("an ##[set-output name=verdict;]pass in the middle", file=sys.stderr, flush=True)

for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "end":
        continue
    answer = {"role": "model", "parts": [{"text": json.dumps(report)}]}
    print(json.dumps({"id": message["id"], "final_response": answer}), flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie is dead, only not yet collected by its parent


@pytest.fixture
def layout() -> Iterator[Layout]:
    with github_layout(PROBE) as made:
        yield made


def test_the_prs_code_reaches_neither_the_token_nor_the_runners_files(runner: Runner, layout):
    workspace = layout.workspace
    templates = [
        ROOT / "src" / "agent_eval_action" / "report" / "templates" / "report.md.j2",
        IMAGE_PACKAGE / "report" / "templates" / "report.md.j2",
    ]
    before = {path: path.read_bytes() for path in templates}
    commands = layout.commands()
    plan = {
        "token": TOKEN,
        "file_commands": [str(p) for p in commands.values()],
        "templates": [str(p) for p in templates],
        "docker": str(layout.docker),
        "credential": str(layout.credential),
        "home": str(layout.home),
    }
    (workspace / "probe.json").write_text(json.dumps(plan))
    done = layout.run(runner, env={"GITHUB_TOKEN": TOKEN})
    results = json.loads((layout.out / "results.json").read_text())
    actual = results["cases"][0]["runs"][0]["invocations"][0]["actual"]["final_response"]
    seen = json.loads(actual["parts"][0]["text"])

    assert seen["uid"] not in (0, RUNNER_UID) and seen["gid"] not in (0, RUNNER_UID)
    assert seen["groups"] in ([], [seen["gid"]])  # none of root's groups (docker's)
    runs_in = private_parent() or tempfile.gettempdir()  # where the action's folders go
    assert seen["home"].startswith(runs_in) and seen["tmpdir"].startswith(seen["home"][:-5])
    assert seen["token_in"] == []  # no readable environment holds the token
    # up the tree: the agent stage (the PR's own user), then the action (root): not readable
    uids = [uid for uid, _ in seen["ancestors"]]
    action = uids.index(0)
    assert set(uids[:action]) == {seen["uid"]}
    assert all(
        result.startswith("blocked") for uid, result in seen["ancestors"] if uid != seen["uid"]
    )
    assert all(v.startswith("blocked") for v in seen["file_commands"].values()), seen
    assert all(v.startswith("blocked") for v in seen["templates"].values()), seen
    assert seen["docker"].startswith("blocked")
    assert seen["runner_temp_credential"].startswith("blocked")
    assert seen["workspace"].startswith("blocked") and seen["home_outside"].startswith("blocked")
    for name in ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE"):
        assert commands[name].read_text() == ""
    assert (
        "PWNED"
        not in commands["GITHUB_OUTPUT"].read_text() + commands["GITHUB_STEP_SUMMARY"].read_text()
    )
    assert {path: path.read_bytes() for path in templates} == before
    assert not _alive(seen["daemon"])  # killed when the agent stage ended
    # the detached one came back to the agent stage (a child subreaper, as the PR's user),
    # not to the action, and died with its case-run
    detached, adopter = seen["detached"]
    assert adopter == seen["stage"] and not _alive(detached)

    # the agent's workflow commands were relayed as text, inside a stopped block
    lines = done.stdout.splitlines()
    forged = next(i for i, line in enumerate(lines) if "::set-output name=verdict::pass" in line)
    opened = max(i for i, line in enumerate(lines[:forged]) if line.startswith("::stop-commands::"))
    token = lines[opened].split("::")[2]
    assert f"::{token}::" in lines[forged:]
    assert not any("##[set-output" in line for line in lines)
    # the kept checkout credential is said, and isolation was not given up
    assert ".git/config keeps a checkout credential" in done.stdout
    assert "no isolation" not in done.stdout
    assert done.returncode == 1, done.stdout + done.stderr  # "hi" was expected


def test_a_file_the_prs_user_cannot_read_is_bad_input_naming_it(runner: Runner, layout):
    hidden = layout.workspace / "evals" / "probe.evalset.json"
    hidden.chmod(0o600)  # the runner's user's alone
    layout.give_to_runner = lambda: None  # keep it so
    done = layout.run(runner)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{hidden.name}: " in done.stdout and "Permission denied" in done.stdout
    assert not (layout.out / "results.json").exists()


def test_without_isolation_the_log_and_the_report_say_so_once(runner: Runner):
    # this interpreter lives where another user cannot read it (a developer's pyenv, say)
    from agent_eval_action.action.sandbox import _cannot_switch

    if _cannot_switch() is None:
        pytest.skip("this machine's interpreter can run as another user: nothing to say")
    head = "e" * 40
    runner.fake.add_pull(7, head, "d" * 40)
    done = runner.run(runner.env("pull_request", pr_payload(7, head, "d" * 40), baseline="none"))
    assert done.stdout.count("::warning::no isolation: ") == 1, done.stdout
    (comment,) = runner.fake.comments_on(7)
    assert comment["body"].count("No isolation") == 1


def test_templates_are_compiled_before_the_prs_code_runs(monkeypatch):
    from agent_eval_action.report import render

    render.preload()
    env = render._environment()
    names = env.list_templates(extensions=["j2"])
    compiled = {name: env.get_template(name) for name in names}

    def no_reading(*_):  # whatever the PR's code writes to a template file later
        raise AssertionError("a template file was read after the PR's code could run")

    monkeypatch.setattr(env.loader, "get_source", no_reading)
    assert all(env.get_template(name) is compiled[name] for name in names)
