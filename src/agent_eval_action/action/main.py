"""`agent-eval-action action`: the GitHub Action's entry point (DESIGN.md §5).

Settings are parsed once from INPUT_* and GITHUB_*, the event picks the mode, and each mode
wires the stages: baseline first (its judge verdicts and durations are reused), then the
eval run in a child process with no token, then compare, then publish. `mode: comment`
never runs or imports project code: it reads a finished PR run's artifact.

Exit codes as the CLI's: 0 pass (and: the baseline was recorded), 1 gate failed, 2 bad
input, 3 infrastructure failure or cancellation (partial results are kept).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_PASS,
    InfrastructureError,
    InputError,
)
from ..github.client import GitHub, GitHubError
from ..github.pulls import PullRequest
from ..results import Results
from . import outputs
from .agent_run import Cancelled, Children, install_requirements, run_evals
from .baseline_source import BaselineQuery, ChosenBaseline, choose_baseline
from .event import (
    Event,
    MergeGroupEvent,
    Mode,
    PullRequestEvent,
    PushEvent,
    WorkflowDispatchEvent,
    WorkflowRunEvent,
    load_event,
    select_mode,
)
from .pr_record import FILE_NAME as PR_FILE
from .pr_record import PrRecord
from .publish import Target, output_values, publish, report_options, write_reports
from .settings import Settings, parse_settings

MODEL_KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")  # the agent's and the judge's: masked in logs
SHARD_ARTIFACT = "{name}-shard-"  # shard jobs upload `<baseline-artifact>-shard-<I>`


@dataclass
class Context:
    settings: Settings
    event: Event
    gh: GitHub | None
    out_dir: Path
    children: Children

    @property
    def repo(self) -> str:
        if self.settings.github.repository is None:
            raise InputError("GITHUB_REPOSITORY is not set: is this running in GitHub Actions?")
        return self.settings.github.repository

    def require_gh(self, why: str) -> GitHub:
        if self.gh is None:
            raise InputError(f"input github-token: {why} needs a token")
        return self.gh

    @property
    def default_branch(self) -> str:
        branch = self.settings.baseline_branch or getattr(self.event, "default_branch", None)
        return branch or "main"


def main(env: Mapping[str, str] | None = None) -> int:
    environ = os.environ if env is None else env
    children = Children()
    children.install()
    try:
        settings = parse_settings(environ)
        for secret in (settings.github_token, *(environ.get(k) for k in MODEL_KEYS)):
            if secret:
                outputs.mask(secret)
        event = load_event(settings.github.event_name, settings.github.event_path)
        mode = select_mode(settings, event)
        gh = (
            GitHub(settings.github_token, settings.github.api_url)
            if settings.github_token
            else None
        )
        out_dir = Path(settings.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        context = Context(settings, event, gh, out_dir, children)
        print(f"agent-eval-action: {mode.value} mode for the {settings.github.event_name} event")
        return MODES[mode](context)
    except InputError as err:
        return _fail(EXIT_BAD_INPUT, str(err))
    except Cancelled:
        return _fail(EXIT_INFRASTRUCTURE, "cancelled (SIGTERM/SIGINT); what was written is kept")
    except (InfrastructureError, GitHubError) as err:
        return _fail(EXIT_INFRASTRUCTURE, str(err))


def _fail(code: int, message: str) -> int:
    line = message.splitlines()[0] if message else "failed"
    outputs.command("error", line)
    print(f"error: {line}", file=sys.stderr)
    return code


# ---- the stages ---------------------------------------------------------------------------


def _run(
    ctx: Context, baseline: ChosenBaseline | None, *, gate: bool = True
) -> tuple[int, Results]:
    """Install the agent's requirements and run the evals; (run's exit code, Results)."""
    from ..compare.loading import load_results

    install_requirements(ctx.settings, ctx.children)
    outputs.group("run the evals")
    try:
        outcome = run_evals(
            ctx.settings,
            ctx.children,
            ctx.out_dir,
            baseline.path if baseline else None,
            baseline.history if baseline else (),
            gate=gate,
        )
    finally:
        outputs.endgroup()
    if outcome.code == EXIT_BAD_INPUT:
        raise InputError("the eval run stopped on bad input (its error is above)")
    if not outcome.results_path.exists():
        raise InfrastructureError(f"the eval run wrote no results (exit {outcome.code})")
    results = load_results(str(outcome.results_path))
    if results.partial or ctx.children.cancelled:
        raise Cancelled("the run was cancelled")
    return outcome.code, results


def _compare_and_publish(
    ctx: Context,
    results: Results,
    baseline: ChosenBaseline,
    target: Target,
    run_code: int = EXIT_PASS,
    *,
    post: bool = True,
) -> int:
    """Compare with the baseline, write the reports, publish (unless `post` is False: the
    fork-safe companion job posts them), set the outputs."""
    from ..compare import compare, flaky_in_history, gate_options, load_baseline

    settings = ctx.settings
    pull = _fresh_pull(ctx, target)
    outdated = pull is not None and pull.head_sha != target.head_sha
    labels = pull.labels if pull is not None else _event_labels(ctx.event)
    fail_on, min_delta = gate_options(",".join(settings.fail_on), settings.min_delta)
    history = [b for b, _ in map(load_baseline, map(str, baseline.history)) if b is not None]
    known = [*history, *([baseline.results] if baseline.results else [])]
    diff = compare(
        results,
        baseline.results,
        fail_on=fail_on,
        min_delta=min_delta,
        known_flaky=flaky_in_history(known),
        no_baseline_reason=baseline.reason,
        accepted=settings.accept_label in labels,
    )
    if baseline.results is None:
        outputs.command("warning", f"NO BASELINE: {baseline.reason}; judged by thresholds only")
    options = report_options(settings, baseline.relation)
    comment, summary = write_reports(ctx.out_dir, diff, results, options)
    outputs.append_summary(settings.github.step_summary, summary)
    code = EXIT_PASS if diff.verdict.passed else EXIT_GATE_FAILED
    if run_code == EXIT_INFRASTRUCTURE and not diff.verdict.passed:
        code = EXIT_INFRASTRUCTURE  # a Gemini outage, not the PR, kept the gate from a verdict
    comment_url = None
    if not post:
        print("mode compare: nothing posted; the report is in the job summary and output-dir")
    elif outdated:
        assert pull is not None
        print(
            f"PR #{pull.number} has moved on to {pull.head_sha[:12]}; this run was for "
            f"{str(target.head_sha)[:12]}: posting nothing (the newer run reports)"
        )
    else:
        published = publish(
            ctx.gh, settings, target, diff, results, comment, options, code != EXIT_PASS
        )
        comment_url = published.comment_url
    why = "; ".join(diff.verdict.reasons) or "nothing regressed"
    print(f"verdict: {'pass' if diff.verdict.passed else 'fail'} ({why})")
    values = output_values(
        diff,
        results,
        settings,
        ctx.out_dir,
        passed=code == EXIT_PASS,
        comment_url=comment_url,
        baseline_sha=baseline.sha,
    )
    outputs.write_outputs(settings.github.output, values)
    return code


def _fresh_pull(ctx: Context, target: Target) -> PullRequest | None:
    """The PR as it is now (head, labels), or None without a PR or a token, or when the
    token may not read it (a job without `pull-requests: read` on a private repository:
    then the event's labels count and the head is not re-checked, said as a warning)."""
    if target.number is None or ctx.gh is None:
        return None
    from ..github.pulls import get_pull

    try:
        return get_pull(ctx.gh, ctx.repo, target.number)
    except GitHubError as err:
        if err.status not in (403, 404):
            raise
        outputs.command(
            "warning",
            f"cannot read PR #{target.number} ({err.status}): the head is not re-checked and "
            "the labels are the event's; give the job `pull-requests: read`",
        )
        return None


def _event_labels(event: Event) -> tuple[str, ...]:
    return event.labels if isinstance(event, PullRequestEvent) else ()


def _record_only(ctx: Context, results: Results, run_code: int) -> int:
    """Results written for upload (baseline, shard, plain run): summary and outputs."""
    from ..compare import compare

    reason = "this run records results; it is not compared"
    diff = compare(results, None, no_baseline_reason=reason)
    options = report_options(ctx.settings, None)
    _, summary = write_reports(ctx.out_dir, diff, results, options)
    outputs.append_summary(ctx.settings.github.step_summary, summary)
    values = output_values(diff, results, ctx.settings, ctx.out_dir, passed=run_code == EXIT_PASS)
    outputs.write_outputs(ctx.settings.github.output, values)
    return run_code


# ---- the modes ----------------------------------------------------------------------------


def _pr_target(ctx: Context) -> tuple[Target, BaselineQuery | None]:
    """The PR (or merge group) under test, and where its baseline is."""
    workflow = ctx.settings.baseline_workflow or ctx.settings.github.workflow_file
    branch = ctx.default_branch
    match ctx.event:
        case PullRequestEvent() as pr:
            target = Target(pr.number, pr.head_sha)
            return target, BaselineQuery(pr.base_sha, pr.head_sha, branch, workflow)
        case MergeGroupEvent() as group:
            # the merge group's commit is the base plus the queued PRs: its base is the baseline
            target = Target(None, group.head_sha)
            return target, BaselineQuery(group.base_sha, None, branch, workflow)
        case WorkflowDispatchEvent(pr_number=int() as number):
            from ..github.pulls import get_pull

            pull = get_pull(ctx.require_gh("comparing with a PR's base"), ctx.repo, number)
            target = Target(number, pull.head_sha)
            return target, BaselineQuery(pull.base_sha, pull.head_sha, branch, workflow)
    sha = ctx.settings.github.sha
    if sha is None:
        return Target(None, None), None
    # a push or a dispatch without a PR: compare with the nearest older baseline
    return Target(None, None), BaselineQuery(sha, None, branch, workflow)


def _write_pr_record(ctx: Context, target: Target, query: BaselineQuery | None) -> None:
    if target.number is not None and target.head_sha is not None:
        base = query.start_sha if query else None
        PrRecord(target.number, target.head_sha, base).write(ctx.out_dir)


def mode_pr(ctx: Context, *, post: bool = True) -> int:
    target, query = _pr_target(ctx)
    _write_pr_record(ctx, target, query)
    baseline = choose_baseline(ctx.settings, ctx.gh, query, ctx.out_dir)
    if baseline.results is not None:
        print(f"baseline: {baseline.relation} ({baseline.path})")
    else:
        print(f"no baseline: {baseline.reason}")
    run_code, results = _run(ctx, baseline)
    if ctx.settings.shard is not None:
        return _record_only(
            ctx, results, EXIT_PASS if run_code != EXIT_INFRASTRUCTURE else run_code
        )
    return _compare_and_publish(ctx, results, baseline, target, run_code, post=post)


def mode_baseline(ctx: Context) -> int:
    """A push to the default branch: run, and write the results that become the baseline.
    The previous baseline, when there is one, lends its judge verdicts of unchanged answers
    (no new judge calls for them) and its case durations; nothing is gated on it."""
    run_code, results = _run(ctx, _previous_baseline(ctx), gate=False)
    if ctx.settings.shard is None and ctx.settings.baseline.kind == "branch":
        _store_on_data_branch(ctx, results)
    code = EXIT_INFRASTRUCTURE if run_code == EXIT_INFRASTRUCTURE else EXIT_PASS
    _record_only(ctx, results, code)
    if code == EXIT_PASS:
        print(f"baseline results written to {ctx.out_dir / 'results.json'} (upload them)")
    return code


def _previous_baseline(ctx: Context) -> ChosenBaseline | None:
    """The nearest older baseline of this commit; any trouble finding it is only a warning."""
    sha = ctx.settings.github.sha
    if sha is None or ctx.settings.baseline.kind in ("none", "path"):
        return None
    workflow = ctx.settings.baseline_workflow or ctx.settings.github.workflow_file
    query = BaselineQuery(sha, None, ctx.default_branch, workflow)
    try:
        found = choose_baseline(ctx.settings, ctx.gh, query, ctx.out_dir)
    except InfrastructureError as err:
        outputs.command("warning", f"previous baseline not fetched ({err}); judging afresh")
        return None
    if found.results is None:
        print(f"no previous baseline to reuse verdicts from: {found.reason}")
        return None
    print(f"reusing judge verdicts and durations from {found.relation}")
    return found


def _store_on_data_branch(ctx: Context, results: Results) -> None:
    from ..github.databranch import DATA_BRANCH, DataBranchError, store_results

    sha = results.source.sha or ctx.settings.github.sha
    if sha is None:
        raise InputError("GITHUB_SHA is not set: cannot store the baseline by commit")
    gh = ctx.require_gh("storing the baseline on a branch")
    data = (ctx.out_dir / "results.json").read_bytes()
    try:
        store_results(gh, ctx.repo, data_branch=DATA_BRANCH, sha=sha, data=data)
    except DataBranchError as err:
        raise InfrastructureError(f"the baseline was not stored on {DATA_BRANCH}: {err}") from None
    print(f"baseline results stored on the {DATA_BRANCH} branch for {sha[:12]}")


def mode_run(ctx: Context) -> int:
    run_code, results = _run(ctx, None)
    return _record_only(ctx, results, run_code)


def mode_comment(ctx: Context) -> int:
    """Fork-safe publishing from a `workflow_run`: the PR run's artifact, checked, posted."""
    from ..compare.loading import load_results
    from ..github.pulls import get_pull
    from . import pr_record
    from .run_artifacts import run_artifact_files

    event = ctx.event
    if not isinstance(event, WorkflowRunEvent):
        raise InputError("mode comment runs on the workflow_run event of the PR workflow")
    if not event.of_pull_request:
        print(f"the triggering run was a {event.event} run, not a pull request: nothing to post")
        return EXIT_PASS
    if event.conclusion not in ("success", "failure"):
        print(f"the PR run ended {event.conclusion}: nothing to post")
        return EXIT_PASS
    gh = ctx.require_gh("mode comment")
    name = ctx.settings.baseline_artifact
    found = run_artifact_files(
        gh, ctx.repo, event.id, lambda n: n == name, {"results.json", PR_FILE}
    )
    if not found or "results.json" not in found[0].files:
        raise InfrastructureError(
            f"run {event.id} has no artifact {name} with results.json: nothing to post"
        )
    files = found[0].files
    source = f"artifact {name} of run {event.id}"
    if PR_FILE in files:
        record = pr_record.parse(files[PR_FILE], source)
    elif len(event.pull_requests) == 1:
        record = PrRecord(event.pull_requests[0], event.head_sha)
    else:
        raise InputError(f"{PR_FILE} is missing: cannot tell which PR to post to", source)
    if record.head_sha != event.head_sha:
        raise InputError(
            f"{PR_FILE} names head {record.head_sha[:12]}, but the run was for "
            f"{event.head_sha[:12]}",
            source,
        )
    pull = get_pull(gh, ctx.repo, record.number)
    if pull.head_sha != event.head_sha:
        print(
            f"PR #{pull.number}'s head is {pull.head_sha[:12]}, not {event.head_sha[:12]} "
            "(moved on, or not this run's PR): posting nothing"
        )
        return EXIT_PASS
    pr_dir = ctx.out_dir / "pr-run"
    pr_dir.mkdir(parents=True, exist_ok=True)
    (pr_dir / "results.json").write_bytes(files["results.json"])
    try:
        results = load_results(str(pr_dir / "results.json"))
    except InputError as err:
        raise InputError(f"{source}: {err}") from None
    (ctx.out_dir / "results.json").write_bytes(files["results.json"])
    workflow = ctx.settings.baseline_workflow or (
        event.workflow_path.rsplit("/", 1)[-1] if event.workflow_path else None
    )
    query = BaselineQuery(pull.base_sha, pull.head_sha, ctx.default_branch, workflow)
    baseline = choose_baseline(ctx.settings, gh, query, ctx.out_dir)
    return _compare_and_publish(ctx, results, baseline, Target(pull.number, pull.head_sha))


def mode_merge(ctx: Context) -> int:
    """The shards of this run, from their artifacts, merged; then as the event asks."""
    from ..compare.loading import load_results
    from ..compare.merge import merge
    from .run_artifacts import run_artifact_files

    gh = ctx.require_gh("mode merge")
    run_id = ctx.settings.github.run_id
    if run_id is None:
        raise InputError("GITHUB_RUN_ID is not set: mode merge reads this run's artifacts")
    prefix = SHARD_ARTIFACT.format(name=ctx.settings.baseline_artifact)
    found = run_artifact_files(
        gh, ctx.repo, run_id, lambda n: n.startswith(prefix), {"results.json"}
    )
    shard_dir = ctx.out_dir / "shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    shards = []
    for artifact in found:
        if "results.json" not in artifact.files:
            raise InfrastructureError(f"artifact {artifact.name} has no results.json")
        path = shard_dir / f"{artifact.name}.json"
        path.write_bytes(artifact.files["results.json"])
        shards.append((artifact.name, load_results(str(path))))
    if not shards:
        raise InfrastructureError(
            f"no shard artifacts named {prefix}<I> in run {run_id}: did the shard jobs upload them?"
        )
    merged = merge(shards)  # a missing shard is InfrastructureError (exit 3)
    merged.write(ctx.out_dir / "results.json")
    if merged.partial:
        raise InfrastructureError("a shard was cancelled: its results are partial (kept)")
    print(f"merged {len(shards)} shards, {len(merged.cases)} cases")
    if isinstance(ctx.event, PushEvent) and ctx.event.to_default_branch:
        if ctx.settings.baseline.kind == "branch":
            _store_on_data_branch(ctx, merged)
        return _record_only(ctx, merged, EXIT_PASS)
    target, query = _pr_target(ctx)
    _write_pr_record(ctx, target, query)
    baseline = choose_baseline(ctx.settings, gh, query, ctx.out_dir)
    return _compare_and_publish(ctx, merged, baseline, target)


def mode_ignore(ctx: Context) -> int:
    print("nothing to do for this event")
    return EXIT_PASS


def mode_compare(ctx: Context) -> int:
    """As on a PR, but posting nothing: for a job whose token cannot write (fork-safe part 1)."""
    return mode_pr(ctx, post=False)


MODES = {
    Mode.PR: mode_pr,
    Mode.COMPARE: mode_compare,
    Mode.BASELINE: mode_baseline,
    Mode.RUN: mode_run,
    Mode.COMMENT: mode_comment,
    Mode.MERGE: mode_merge,
    Mode.IGNORE: mode_ignore,
}
