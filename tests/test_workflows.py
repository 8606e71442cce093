"""The workflows: this repository's (.github/workflows) and the copy-paste examples
(examples/workflows, docs/workflows.md). Each rule here is one that a broken workflow would
break silently on GitHub: a token with more rights than the job needs, a PR run that writes
no baseline or finds none, a fork-safe comment workflow that runs PR code with a write
token, an input the action does not have. (Syntax and expressions are actionlint's and
check-jsonschema's job, security smells zizmor's: all three run in .ci/run.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_eval_action.action.event import DISPATCH_PR_INPUTS

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW_DIRS = (ROOT / ".github" / "workflows", ROOT / "examples" / "workflows")
WORKFLOWS = sorted(p for d in WORKFLOW_DIRS for p in d.glob("*.y*ml"))
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
INPUTS = ACTION["inputs"]
BASELINE_ARTIFACT = INPUTS["baseline-artifact"]["default"]
OUTPUT_DIR = INPUTS["output-dir"]["default"]
PR_EVENTS = {"pull_request", "merge_group"}

# What each kind of job that runs the action needs, and why (examples/workflows/README.md).
READ = {"contents": "read", "actions": "read"}  # check out; download the baseline artifact
PUBLISH = {"pull-requests": "write", "checks": "write"}  # the sticky comment; the check run
NEEDS = {
    "pr": READ | PUBLISH,  # pull_request / merge_group: run, compare, publish
    "baseline": READ,  # push to main: run and write the baseline (reusing the previous one's verdicts)
    "shard": READ,  # one shard: run only; on a PR the baseline's durations balance the shards
    "compare": READ | {"pull-requests": "read"},  # fork-safe part 1: compare, publish nothing
    "comment": {"actions": "read"} | PUBLISH,  # fork-safe part 2: never checks out
    "merge": {"actions": "read"} | PUBLISH,  # shard artifacts of the run; publish
}


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{rel(path)}: not a YAML mapping"
    # YAML 1.1 reads the key `on` as True
    if True in data:
        data["on"] = data.pop(True)
    return data


def triggers(wf: dict[str, Any]) -> set[str]:
    on = wf["on"]
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return set(on)
    return set(on)


def is_ours(step: dict[str, Any]) -> bool:
    uses = step.get("uses", "")
    return uses in ("./", "$/") or re.fullmatch(r"[\w.-]+/agent-eval-action@\S+", uses) is not None


def action_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if is_ours(s)]


def job_events(wf: dict[str, Any], job: dict[str, Any]) -> set[str]:
    """The events a job runs on: the workflow's, narrowed by a job `if` on github.event_name."""
    events = triggers(wf)
    condition = str(job.get("if", ""))
    for op, name in re.findall(r"github\.event_name\s*(==|!=)\s*'([\w-]+)'", condition):
        events = events & {name} if op == "==" else events - {name}
    return events


def dispatches_a_pr(wf: dict[str, Any], job: dict[str, Any]) -> bool:
    """A job on workflow_dispatch whose inputs name a PR: mode auto compares and publishes."""
    on = wf["on"]
    dispatch = on.get("workflow_dispatch") if isinstance(on, dict) else None
    inputs = set((dispatch or {}).get("inputs") or {})
    return "workflow_dispatch" in job_events(wf, job) and bool(inputs & set(DISPATCH_PR_INPUTS))


def kind(wf: dict[str, Any], job: dict[str, Any]) -> str | None:
    """Which of NEEDS a job that runs the action is, from its inputs and its events."""
    steps = action_steps(job)
    if not steps:
        return None
    inputs = steps[0].get("with", {})
    mode = inputs.get("mode", "auto")
    if mode != "auto":
        return mode
    if "shard" in inputs:
        return "shard"
    return "pr" if job_events(wf, job) & PR_EVENTS or dispatches_a_pr(wf, job) else "baseline"


def publishes_to_pypi(job: dict[str, Any]) -> bool:
    return any(
        s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in job.get("steps", [])
    )


def uses_checkout(job: dict[str, Any]) -> bool:
    return any(s.get("uses", "").startswith("actions/checkout@") for s in job.get("steps", []))


def jobs(path: Path) -> list[tuple[str, dict[str, Any]]]:
    return list(load(path)["jobs"].items())


def test_the_workflows_are_found():
    names = {rel(p) for p in WORKFLOWS}
    for expected in (
        ".github/workflows/ci.yml",
        ".github/workflows/dogfood.yml",
        ".github/workflows/release.yml",
        "examples/workflows/pr-gate.yml",
        "examples/workflows/fork-safe-eval.yml",
        "examples/workflows/fork-safe-comment.yml",
        "examples/workflows/sharded.yml",
        "examples/workflows/dispatch-pr.yml",
    ):
        assert expected in names


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_top_level_permissions_are_read_only(path):
    wf = load(path)
    assert "permissions" in wf, (
        f"{rel(path)}: no top-level `permissions:`; without one every job gets the "
        "repository's default token rights (often read-write)"
    )
    top = wf["permissions"]
    assert top in ({}, {"contents": "read"}), (
        f"{rel(path)}: top-level permissions {top!r}; grant writes per job, never to the workflow"
    )
    for name, job in wf["jobs"].items():
        assert job.get("permissions") not in ("write-all", "read-all"), (
            f"{rel(path)}: job {name} asks for {job.get('permissions')}"
        )
        assert isinstance(job.get("permissions", {}), dict), f"{rel(path)}: job {name}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_jobs_running_the_action_have_exactly_the_permissions_they_need(path):
    wf = load(path)
    for name, job in wf["jobs"].items():
        what = kind(wf, job)
        if what is None:
            continue
        assert what in NEEDS, f"{rel(path)}: job {name}: unknown mode {what!r}"
        need = dict(NEEDS[what])
        if what in ("comment", "merge") and uses_checkout(job):
            need["contents"] = "read"
        assert job.get("permissions") == need, (
            f"{rel(path)}: job {name} runs the action as {what!r} and must have exactly "
            f"permissions {need}, has {job.get('permissions')}"
        )


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_write_permissions_only_where_needed(path):
    """Writes: PR publishing (comment, check) in action jobs; in release, contents/packages
    for the image's job and id-token for the job that publishes to PyPI, each alone."""
    wf = load(path)
    for name, job in wf["jobs"].items():
        writes = {k for k, v in (job.get("permissions") or {}).items() if v == "write"}
        if kind(wf, job) in ("pr", "comment", "merge"):
            allowed = {"pull-requests", "checks"}
        elif path.name == "release.yml":
            allowed = {"id-token"} if publishes_to_pypi(job) else {"contents", "packages"}
        else:
            allowed = set()
        assert writes <= allowed, f"{rel(path)}: job {name} writes {sorted(writes - allowed)}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_no_pull_request_target(path):
    assert "pull_request_target" not in triggers(load(path)), (
        f"{rel(path)}: pull_request_target runs with secrets and a write token on fork PRs; "
        "running the PR's agent there hands both to the PR (use the fork-safe pair instead)"
    )


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_pr_workflows_cancel_superseded_runs(path):
    wf = load(path)
    events = triggers(wf)
    if "pull_request" not in events:
        return
    concurrency = wf.get("concurrency")
    assert isinstance(concurrency, dict), f"{rel(path)}: a PR workflow needs a concurrency group"
    group = str(concurrency.get("group", ""))
    assert "github.workflow" in group and "github.event.pull_request.number" in group, (
        f"{rel(path)}: the concurrency group {group!r} must be keyed by the workflow and the PR"
    )
    cancel = concurrency.get("cancel-in-progress")
    if "push" in events:
        # a push to main records a baseline: it must not be cancelled by the next push
        assert isinstance(cancel, str) and re.search(
            r"github\.event_name\s*==\s*'pull_request'", cancel
        ), f"{rel(path)}: cancel-in-progress must be true for PRs only, is {cancel!r}"
    else:
        assert cancel is True, f"{rel(path)}: cancel-in-progress must be true, is {cancel!r}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_uploads_keep_partial_results(path):
    wf = load(path)
    for name, job in wf["jobs"].items():
        if kind(wf, job) is None:
            continue  # the release's dist is uploaded only when it was built and checked
        for step in job.get("steps", []):
            if step.get("uses", "").startswith("actions/upload-artifact@"):
                assert step.get("if") == "always()", (
                    f"{rel(path)}: job {name}: upload {step['with'].get('name')} without "
                    "`if: always()` loses the results of a failed gate"
                )


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_action_inputs_exist(path):
    for name, job in jobs(path):
        for step in action_steps(job):
            unknown = set(step.get("with", {})) - set(INPUTS)
            assert not unknown, f"{rel(path)}: job {name}: not inputs of action.yml: {unknown}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_results_are_uploaded_under_the_names_the_action_looks_for(path):
    wf = load(path)
    for name, job in wf["jobs"].items():
        what = kind(wf, job)
        if what is None or what == "comment":
            continue
        step = action_steps(job)[0]
        output = step.get("with", {}).get("output-dir", OUTPUT_DIR)
        uploads = [
            s["with"]
            for s in job["steps"]
            if s.get("uses", "").startswith("actions/upload-artifact@")
            and s["with"].get("archive", True) is not False  # report.html's, below
        ]
        assert uploads, f"{rel(path)}: job {name} runs the action but uploads nothing"
        expected = (
            "agent-eval-results-shard-${{ matrix.shard }}" if what == "shard" else BASELINE_ARTIFACT
        )
        names = [u["name"] for u in uploads]
        assert names == [expected], (
            f"{rel(path)}: job {name} uploads {names}, must upload [{expected!r}] "
            "(the name the PR runs' baseline lookup and the merge job look for)"
        )
        # a push job leaves out baseline/, the previous baseline: PRs download the whole zip
        expected_paths = [output, f"!{output}/baseline"] if what == "baseline" else [output]
        assert uploads[0]["path"].split() == expected_paths, (
            f"{rel(path)}: job {name} uploads {uploads[0]['path']!r}, not {expected_paths} "
            f"(the action writes {output!r})"
        )


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_jobs_that_compare_upload_the_drill_down_report_as_a_file(path):
    """report.html as the file itself (`archive: false`, which names the artifact after the
    file): the name the comment job looks it up by (report/html.py FILE_NAME)."""
    from agent_eval_action.report.html import FILE_NAME

    wf = load(path)
    for name, job in wf["jobs"].items():
        if kind(wf, job) not in ("pr", "compare", "merge"):
            continue
        output = action_steps(job)[0].get("with", {}).get("output-dir", OUTPUT_DIR)
        direct = [
            s
            for s in job["steps"]
            if s.get("uses", "").startswith("actions/upload-artifact@")
            and s["with"].get("archive") is False
        ]
        assert [s["with"]["path"] for s in direct] == [f"{output}/{FILE_NAME}"], (
            f"{rel(path)}: job {name} must upload {output}/{FILE_NAME} with archive: false"
        )
        assert "name" not in direct[0]["with"], f"{rel(path)}: job {name}: `name` is ignored"
        assert direct[0]["with"].get("overwrite") is True, f"{rel(path)}: a re-run must replace it"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_a_pr_workflow_records_its_own_baseline(path):
    """The action looks for the baseline among the push runs of the same workflow."""
    wf = load(path)
    kinds = {kind(wf, job) for _, job in wf["jobs"].items()} - {None}
    # a job that names baseline-workflow compares with another workflow's push runs
    elsewhere = all(
        "baseline-workflow" in action_steps(job)[0].get("with", {})
        for _, job in wf["jobs"].items()
        if kind(wf, job) in ("pr", "compare", "merge")
    )
    if kinds & {"pr", "compare", "merge"} and not {"comment"} & kinds and not elsewhere:
        assert "push" in triggers(wf), (
            f"{rel(path)}: compares with a baseline but never runs on push to record one"
        )
        on_push = [j for _, j in wf["jobs"].items() if "push" in job_events(wf, j) and kind(wf, j)]
        assert on_push, f"{rel(path)}: no job runs the action on push"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_workflow_run_workflows_never_run_pr_code(path):
    wf = load(path)
    if "workflow_run" not in triggers(wf):
        return
    names = {load(p).get("name") for p in WORKFLOWS if p.parent == path.parent}
    watched = wf["on"]["workflow_run"]["workflows"]
    assert set(watched) <= names, f"{rel(path)}: watches {watched}, not workflows here"
    for name, job in wf["jobs"].items():
        condition = str(job.get("if", ""))
        assert re.search(r"github\.event\.workflow_run\.event\s*==\s*'pull_request'", condition), (
            f"{rel(path)}: job {name} must run only for PR runs (workflow_run.event)"
        )
        for step in job.get("steps", []):
            uses = step.get("uses", "")
            assert not uses.startswith("actions/checkout@"), (
                f"{rel(path)}: job {name} checks out code with a write token"
            )
            assert uses not in ("./", "$/"), f"{rel(path)}: job {name} runs a local action"
            assert "run" not in step, f"{rel(path)}: job {name} runs a script"
        assert {kind(wf, job)} <= {"comment", None}, f"{rel(path)}: job {name}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_a_dispatch_for_a_pr_checks_out_its_head_and_passes_no_secrets(path):
    """workflow_dispatch runs on the dispatched ref with secrets and a write token: the job
    checks out the PR's head (the action refuses any other commit) and gives the PR's code
    no secret; forks stay refused (allow-fork-dispatch unset)."""
    wf = load(path)
    for name, job in wf["jobs"].items():
        if not (action_steps(job) and dispatches_a_pr(wf, job)):
            continue
        checkouts = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
        assert len(checkouts) == 1, f"{rel(path)}: job {name} must check out the PR"
        ref = str(checkouts[0].get("with", {}).get("ref", ""))
        assert re.fullmatch(r"refs/pull/\$\{\{ inputs\.pr[-_\w]* \}\}/head", ref), (
            f"{rel(path)}: job {name} checks out {ref!r}, not the PR's head"
        )
        for step in job["steps"]:
            assert "secrets." not in str(step.get("env", {})), (
                f"{rel(path)}: job {name} passes a secret to a step that runs PR code"
            )
        assert "secrets." not in str(job.get("env", {})) + str(wf.get("env", {}))
        for step in action_steps(job):
            allow = str(step.get("with", {}).get("allow-fork-dispatch", "false")).lower()
            assert allow == "false", f"{rel(path)}: job {name} runs forks' heads with secrets"


def test_the_fork_safe_eval_cannot_write():
    path = ROOT / "examples" / "workflows" / "fork-safe-eval.yml"
    for name, job in jobs(path):
        writes = [k for k, v in (job.get("permissions") or {}).items() if v != "read"]
        assert not writes, f"{rel(path)}: job {name} has write permissions {writes}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_shards_and_merge(path):
    wf = load(path)
    shard_jobs = [n for n, j in wf["jobs"].items() if kind(wf, j) == "shard"]
    merge_jobs = [(n, j) for n, j in wf["jobs"].items() if kind(wf, j) == "merge"]
    if not shard_jobs and not merge_jobs:
        return
    assert len(shard_jobs) == 1 and len(merge_jobs) == 1, (
        f"{rel(path)}: one shard matrix, one merge"
    )
    shard = wf["jobs"][shard_jobs[0]]
    shards = shard["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)), f"{rel(path)}: matrix.shard {shards}"
    assert shard["strategy"].get("fail-fast") is False, f"{rel(path)}: fail-fast cancels shards"
    value = action_steps(shard)[0]["with"]["shard"]
    assert value == f"${{{{ matrix.shard }}}}/{len(shards)}", f"{rel(path)}: shard: {value}"
    name, merge = merge_jobs[0]
    needs = merge.get("needs")
    assert shard_jobs[0] in ([needs] if isinstance(needs, str) else needs), f"{rel(path)}: {name}"
    assert merge.get("if") == "always()", f"{rel(path)}: {name} must merge whatever the shards did"


def _uses_lines(path: Path) -> list[tuple[int, str]]:
    return [
        (n, line.strip())
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.match(r"\s*(-\s+)?uses:", line)
    ]


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_actions_are_pinned_by_commit(path):
    """Every action but ours is pinned to a full commit SHA, its version in a comment."""
    for n, line in _uses_lines(path):
        ref = line.split("uses:", 1)[1].strip()
        if ref.startswith(("./", "$/")) or re.match(r"[\w.-]+/agent-eval-action@v\d+\b", ref):
            continue
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", ref), (
            f"{rel(path)}:{n}: `{ref}` is not pinned as OWNER/REPO@<40-hex sha> # vX.Y.Z"
        )


def test_each_action_is_pinned_to_one_commit_everywhere():
    pins: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        for _, line in _uses_lines(path):
            match = re.search(r"uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (\S+)", line)
            if match:
                pins.setdefault(match[1], set()).add(f"{match[2]} {match[3]}")
    assert pins, "no pinned actions found"
    for action, seen in pins.items():
        assert len(seen) == 1, f"{action} is pinned to different commits: {sorted(seen)}"


def test_dogfood_runs_the_flagship_example():
    path = ROOT / ".github" / "workflows" / "dogfood.yml"
    wf = load(path)
    steps = [s for _, j in wf["jobs"].items() for s in action_steps(j)]
    assert steps and all(s["uses"] == "./" for s in steps)
    for step in steps:
        inputs = step["with"]
        assert (ROOT / inputs["agent"] / "agent.py").is_file(), inputs["agent"]
        assert (ROOT / inputs["evals"]).is_dir(), inputs["evals"]
        assert "GOOGLE_API_KEY" not in str(step.get("env", {})), "the example is offline"
    for _, job in wf["jobs"].items():
        if action_steps(job):
            assert uses_checkout(job), "uses: ./ needs the checkout"


def test_release_pins_the_image_by_digest():
    path = ROOT / ".github" / "workflows" / "release.yml"
    wf = load(path)
    assert set(triggers(wf)) == {"push"} and set(wf["on"]["push"]) == {"tags"}
    assert all(t.startswith("v") for t in wf["on"]["push"]["tags"])
    job = wf["jobs"]["release"]
    assert job["permissions"] == {"contents": "write", "packages": "write"}
    steps = job["steps"]
    build = [s for s in steps if s.get("uses", "").startswith("docker/build-push-action@")]
    assert len(build) == 1 and build[0]["with"]["push"] is True and build[0].get("id")
    script = "\n".join(s.get("run", "") for s in steps)
    assert "image: docker://${IMAGE}@${DIGEST}" in script
    assert re.search(r"\^sha256:\[0-9a-f\]\{64\}\$", script), "the digest is not checked"
    assert 'major="${TAG%%.*}"' in script and "push --force origin" in script
    # the runner's action.yml has the line that the release step rewrites
    assert ACTION["runs"]["image"] == "Dockerfile"
    assert "\n  image: Dockerfile\n" in (ROOT / "action.yml").read_text()
    # no ${{ }} inside scripts: values reach the shell through env only
    assert "${{" not in script, f"{rel(path)}: expression inside a run: script"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_no_expressions_inside_scripts(path):
    for name, job in jobs(path):
        for step in job.get("steps", []):
            assert "${{" not in step.get("run", ""), (
                f"{rel(path)}: job {name}: pass values to `run:` through `env:`, not ${{{{ }}}}"
            )


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_checkouts_do_not_keep_the_token(path):
    for name, job in jobs(path):
        for step in job.get("steps", []):
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step.get("with", {}).get("persist-credentials") is False, (
                    f"{rel(path)}: job {name}: checkout without persist-credentials: false "
                    "leaves the token in .git/config for every later step"
                )


def test_docs_show_the_example_files_verbatim():
    """docs/workflows.md embeds each example workflow whole, for copy and paste."""
    doc = (ROOT / "docs" / "workflows.md").read_text()
    blocks = dict(
        re.findall(r"`(examples/workflows/[\w.-]+\.yml)`:\n\n```yaml\n(.*?)```\n", doc, re.S)
    )
    examples = {rel(p) for p in WORKFLOWS if p.parent.name == "workflows" and "examples" in p.parts}
    assert set(blocks) == examples, (
        f"docs/workflows.md shows {sorted(blocks)}, not {sorted(examples)}"
    )
    for name, text in blocks.items():
        assert text == (ROOT / name).read_text(), f"docs/workflows.md: the block of {name} differs"


# --- the image, the CI container and the release (security issue, finding 11) ------------

DOCKERFILES = [ROOT / "Dockerfile", *sorted((ROOT / ".github").rglob("Dockerfile"))]
CI_IMAGE = ROOT / ".github" / "ci-image" / "Dockerfile"
DIGEST_PINNED = re.compile(r"[\w.-]+(/[\w.-]+)*(:[\w.-]+)?@sha256:[0-9a-f]{64}")


def from_images(path: Path) -> list[str]:
    """The image of every FROM of a Dockerfile that is not an earlier stage of the same file."""
    images, stages = [], set()
    for line in path.read_text().splitlines():
        words = line.split()
        if not words or words[0].upper() != "FROM":
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if args[0] not in stages:
            images.append(args[0])
        if len(args) >= 3 and args[1].upper() == "AS":
            stages.add(args[2])
    return images


def job_images(job: dict[str, Any]) -> list[str]:
    """Every image a job runs: its container, its services, its `docker://` steps."""
    found = []
    for spec in [job.get("container"), *(job.get("services") or {}).values()]:
        if spec:
            found.append(spec if isinstance(spec, str) else spec["image"])
    found += [
        s["uses"][len("docker://") :]
        for s in job["steps"]
        if s.get("uses", "").startswith("docker://")
    ]
    return found


def test_the_dockerfiles_are_found():
    assert ROOT / "Dockerfile" in DOCKERFILES and CI_IMAGE in DOCKERFILES


@pytest.mark.parametrize("path", DOCKERFILES, ids=rel)
def test_base_images_are_pinned_by_digest(path):
    images = from_images(path)
    assert images, f"{rel(path)}: no FROM"
    for image in images:
        assert DIGEST_PINNED.fullmatch(image), (
            f"{rel(path)}: FROM {image} is not pinned as IMAGE:TAG@sha256:<64 hex> "
            "(a tag moves: the image built would not be the one reviewed)"
        )


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_container_images_are_pinned_by_digest(path):
    for name, job in jobs(path):
        for image in job_images(job):
            assert DIGEST_PINNED.fullmatch(image), (
                f"{rel(path)}: job {name} runs {image}, not pinned as IMAGE:TAG@sha256:<64 hex>"
            )


def test_ci_runs_the_container_dependabot_refreshes():
    """Dependabot does not read a workflow's `container:`; it refreshes .github/ci-image."""
    [(_, job)] = jobs(ROOT / ".github" / "workflows" / "ci.yml")
    assert job_images(job) == from_images(CI_IMAGE), (
        f"ci.yml's container is not the image of {rel(CI_IMAGE)}: "
        "copy the reference Dependabot bumped there into ci.yml's `container:`"
    )


def test_dependabot_refreshes_the_pins():
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert config["version"] == 2
    updates = {u["package-ecosystem"]: u for u in config["updates"]}
    assert {"docker", "github-actions"} <= set(updates)

    def dirs(update: dict[str, Any]) -> set[str]:
        return set(update.get("directories") or [update["directory"]])

    for path in DOCKERFILES:
        folder = path.parent.relative_to(ROOT).as_posix()
        folder = "/" if folder == "." else "/" + folder
        assert folder in dirs(updates["docker"]), f"{rel(path)}: Dependabot does not refresh it"
    assert "/" in dirs(updates["github-actions"])  # .github/workflows


RELEASE = ROOT / ".github" / "workflows" / "release.yml"
DEFAULT_BRANCH_GUARD = re.compile(
    r'git merge-base --is-ancestor "\$GITHUB_SHA" "refs/remotes/origin/\$\{DEFAULT_BRANCH\}"'
)


def environment_of(job: dict[str, Any]) -> str | None:
    environment = job.get("environment")
    return environment.get("name") if isinstance(environment, dict) else environment


def needs_of(wf: dict[str, Any], name: str) -> set[str]:
    """Every job that must succeed before job `name` starts (needs, transitively)."""
    needs = wf["jobs"][name].get("needs", [])
    direct = {needs} if isinstance(needs, str) else set(needs)
    return direct.union(*(needs_of(wf, n) for n in direct))


def test_release_waits_for_its_environments_and_releases_only_the_default_branch():
    """Each job that publishes runs in its protected environment (the image's in `release`,
    the package's in `pypi`), and none starts unless the `check` job found the tag's commit
    on the default branch."""
    wf = load(RELEASE)
    for name, job in wf["jobs"].items():
        writes = {k for k, v in (job.get("permissions") or {}).items() if v == "write"}
        if writes & {"contents", "packages"}:
            assert environment_of(job) == "release", (
                f"release.yml: job {name} writes outside `release`"
            )
        if "id-token" in writes:
            assert environment_of(job) == "pypi", (
                f"release.yml: job {name} mints OIDC tokens outside `pypi`"
            )
    guarded = [
        (name, i)
        for name, job in wf["jobs"].items()
        for i, s in enumerate(job["steps"])
        if DEFAULT_BRANCH_GUARD.search(s.get("run", ""))
    ]
    assert len(guarded) == 1, "no one step checks that the tag's commit is on the default branch"
    [(check_name, index)] = guarded
    check_job = wf["jobs"][check_name]
    assert check_job["permissions"] == {"contents": "read"} and "needs" not in check_job
    steps = check_job["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"].get("fetch-depth") == 0, "the check needs the default branch's history"
    check = steps[index]
    assert check["env"]["DEFAULT_BRANCH"] == "${{ github.event.repository.default_branch }}"
    assert "set -euo pipefail" in check["run"] and "exit 1" in check["run"]
    assert "if" not in check and "continue-on-error" not in check, "the check must stop the job"
    for name, job in wf["jobs"].items():
        if name == check_name:
            continue
        assert check_name in needs_of(wf, name), f"release.yml: job {name} runs without the check"
        assert "if" not in job, (
            f"release.yml: job {name} has an `if:` (always() would skip the check)"
        )


def _build_and_publish() -> tuple[dict[str, Any], str, dict[str, Any], str, dict[str, Any]]:
    wf = load(RELEASE)
    [(publish_name, publish)] = [(n, j) for n, j in wf["jobs"].items() if publishes_to_pypi(j)]
    [(build_name, build)] = [
        (n, j)
        for n, j in wf["jobs"].items()
        if any("python -m build" in s.get("run", "") for s in j["steps"])
    ]
    return wf, build_name, build, publish_name, publish


def test_release_publishes_to_pypi_by_trusted_publishing_from_one_job():
    """The dist is built in a job with a read-only token; another job, the only one with
    `id-token: write`, in the `pypi` environment, runs no repository code and uploads it
    with attestations."""
    wf, build_name, build, publish_name, publish = _build_and_publish()
    minting = [n for n, j in wf["jobs"].items() if (j.get("permissions") or {}).get("id-token")]
    assert minting == [publish_name], f"release.yml: jobs with id-token: {minting}"
    assert publish["permissions"] == {"id-token": "write"}
    assert environment_of(publish) == "pypi"
    assert {build_name} <= needs_of(wf, publish_name)
    uses = [s.get("uses", "").split("@")[0] for s in publish["steps"]]
    assert uses == ["actions/download-artifact", "pypa/gh-action-pypi-publish"], (
        f"release.yml: job {publish_name} must download the dist and publish it, nothing else"
    )
    assert not any("run" in s for s in publish["steps"])
    download, upload_step = publish["steps"][0]["with"], publish["steps"][1].get("with", {})
    assert upload_step.get("attestations", True) is True, "attestations are turned off"
    assert "password" not in upload_step and "secrets." not in str(publish), "a stored token"
    assert upload_step.get("packages-dir", "dist/").rstrip("/") == download["path"].rstrip("/")

    assert build["permissions"] == {"contents": "read"} and environment_of(build) is None
    assert "secrets." not in str(build)
    [upload] = [
        s["with"]
        for s in build["steps"]
        if s.get("uses", "").startswith("actions/upload-artifact@")
    ]
    assert upload["name"] == download["name"] and upload["path"].rstrip("/") == "dist"
    assert upload.get("if-no-files-found") == "error"
    script = "\n".join(s.get("run", "") for s in build["steps"])
    assert "python -m build --outdir dist ." in script and "twine check --strict dist/*" in script


def _dev_pins() -> dict[str, str]:
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "dev"
    ]
    return dict(re.findall(r"^([\w.-]+)==([\w.]+)$", "\n".join(dev), re.M))


def _build_steps() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The build job's install step and its other `run:` steps."""
    _, _, build, _, _ = _build_and_publish()
    runs = [s for s in build["steps"] if "run" in s]
    install, rest = runs[0], runs[1:]
    assert install["run"].startswith("python -m pip install"), install["run"]
    return install, rest


def test_release_builds_with_the_dev_extras_build_tools():
    """The dry run below runs the build with the dev extra's build and twine: the job's own
    install step must pin the same versions."""
    install, _ = _build_steps()
    pinned = dict(re.findall(r'"([\w.-]+)==([\w.]+)"', install["run"]))
    assert set(pinned) == {"build", "twine"}
    assert {k: _dev_pins()[k] for k in pinned} == pinned, (
        "release.yml and [dev] pin different versions"
    )


def _dry_run(tmp_path: Path, tag: str) -> subprocess.CompletedProcess[str]:
    """The build job's steps after its install, run by bash in a commit of this tree's
    package files, as the job runs them in its checkout of the tag."""
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, work / name)
    shutil.copytree(
        ROOT / "src",
        work / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.tmp"),
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tag"]):
        subprocess.run([*git, *argv], cwd=work, check=True)
    sha = subprocess.run(
        [*git, "rev-parse", "HEAD"], cwd=work, check=True, capture_output=True, text=True
    ).stdout.strip()
    expressions = {"${{ github.ref_name }}": tag}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTHONPATH"))}
    env["GITHUB_SHA"] = sha
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    _, steps = _build_steps()
    done = None
    for step in steps:
        step_env = {k: expressions[v] for k, v in step.get("env", {}).items()}
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=work,
            env=env | step_env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            break
    assert done is not None
    return done


@pytest.mark.e2e
def test_release_build_steps_dry_run(tmp_path):
    """The build job's steps, run here: the sdist and the wheel of pyproject.toml's version,
    both passing `twine check --strict`, and nothing else in dist/."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = _dry_run(tmp_path, f"v{version}")
    assert done.returncode == 0, done.stdout + done.stderr
    dist = tmp_path / "checkout" / "dist"
    assert sorted(p.name for p in dist.iterdir()) == [
        f"agent_eval_action-{version}-py3-none-any.whl",
        f"agent_eval_action-{version}.tar.gz",
    ]
    assert "PASSED" in done.stdout and "FAILED" not in done.stdout
    with zipfile.ZipFile(dist / f"agent_eval_action-{version}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
    # the files that are not Python modules: package data the tool cannot run without
    assert "agent_eval_action/report/templates/report.md.j2" in names
    assert "agent_eval_action/metrics/judge/prices.json" in names
    assert not any(n.startswith(("tests/", "examples/")) for n in names)


def test_release_build_refuses_a_tag_that_is_not_the_version(tmp_path):
    """A tag v9.9.9 on a tree whose pyproject.toml says another version publishes nothing."""
    done = _dry_run(tmp_path, "v9.9.9")
    assert done.returncode == 1
    assert "::error::tag v9.9.9 is not pyproject.toml's version" in done.stdout
    assert not (tmp_path / "checkout" / "dist").exists()
