"""The stages a mode is made of: run the evals (in a child process), compare with the
baseline and publish, or only record the results (docs/action.md, "Modes")."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ..compare.model import Diff
from ..errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_PASS,
    InfrastructureError,
    InputError,
)
from ..github.client import GitHubError
from ..github.pulls import PullRequest
from ..pipeline.paired import summary as paired_summary
from ..pipeline.preview import Preview
from ..report.model import AcceptOffer, Report
from ..results import Results
from . import outputs, sandbox
from .agent_run import base_environment, run_evals
from .baseline_source import ChosenBaseline
from .children import FILE_COMMANDS, Cancelled
from .context import Context
from .event import Event, MergeGroupEvent, PullRequestEvent, WorkflowRunEvent
from .key_meter import plan_job
from .merge_base import base_of
from .publish import (
    Target,
    output_values,
    publish,
    report_options,
    report_url,
    write_reports,
)
from .requirements import install_requirements
from .sandbox import PrUser


def run_suite(
    ctx: Context, baseline: ChosenBaseline | None, *, gate: bool = True
) -> tuple[int, Results]:
    """Install the agent's requirements and run the evals; (run's exit code, Results)."""
    from ..compare.loading import load_results

    user = pr_user(ctx)
    try:
        # its agent stage's deadline and the job's calls on the judge's key, planned before
        # any of the PR's code runs; bad input here
        job = plan_job(ctx.settings, confirms=gate and baseline is not None, records=not gate)
        show_preview(ctx, job.preview)
        agent_env = install_requirements(ctx.settings, ctx.children, user, ctx.dirs.given)
        outputs.group("run the evals")
        try:
            outcome = run_evals(
                ctx.settings,
                ctx.children,
                user,
                ctx.out_dir,
                ctx.dirs.private,
                baseline.path if baseline else None,
                baseline.history if baseline else (),
                gate=gate,
                agent_env=agent_env,
                known=baseline.older.plus(baseline.results) if baseline else None,
                paired_base=base_of(ctx.event, ctx.default_branch),
                case_runs=job.case_runs,
                key_calls=job.key_calls,
                scenario=job.scenario_cases,
                main_user=lambda tree: main_user(ctx, tree),
            )
        finally:
            outputs.endgroup()
    finally:
        user.remove()
    if outcome.code == EXIT_BAD_INPUT:
        raise InputError("the eval run stopped on bad input (its error is above)")
    if outcome.failure is not None:  # never a verdict without this run's scores
        raise InfrastructureError(f"no verdict: {outcome.failure}")
    if not outcome.results_path.exists():
        raise InfrastructureError(f"the eval run wrote no results (exit {outcome.code})")
    results = load_results(str(outcome.results_path))
    notes = [outcome.paired_note] if outcome.paired_note else []
    # what the run could not do (paired runs skipped, re-runs the confirmation limit cut):
    # a workflow warning, and said at the top of the report too
    for said in [*notes, *outcome.warnings]:
        outputs.command("warning", said)
        ctx.notes.append(f"⚠️ {said[0].upper()}{said[1:]}.")
    deprecated = list(ctx.settings.deprecated)  # the log said it when the settings were read
    if outcome.warnings or notes or deprecated:
        results.warnings.extend([*outcome.warnings, *notes, *deprecated])
        results.write(outcome.results_path)
    if outcome.merge_base is not None and baseline is not None:
        baseline.merge_base = load_results(str(outcome.merge_base))
        ctx.notes.append(f"🔀 {paired_summary(baseline.merge_base)}.")
    if ctx.children.cancelled:
        raise Cancelled("the run was cancelled")
    if results.partial:  # its traces say cancelled, or end short: the stage's word, not ours
        raise InfrastructureError(
            "no verdict: an agent stage's traces end short or say it was cancelled, "
            "though the run was not"
        )
    return outcome.code, results


def show_preview(ctx: Context, preview: Preview) -> None:
    """The run's cost preview (pipeline/preview.py) in the log, before any of the PR's code
    runs, and as a short block in the job summary (the report is written below it). Its
    eval file names are the PR's: each line is said as plain text, the block is a code
    block no name can close."""
    from ..pipeline.preview import lines

    said = lines(preview)
    for line in said:
        outputs.say(line)
    try:
        outputs.append_summary(ctx.settings.github.step_summary, preview_block(said))
    except OSError as err:  # the run goes on; the report's own summary says it again, failing
        outputs.command("warning", f"the job summary cannot be written: {err}")


def preview_block(said: list[str]) -> str:
    """The preview's lines as the job summary shows them."""
    from ..report.escape import code_block

    return code_block("\n".join(said))


def pr_user(ctx: Context) -> PrUser:
    """The user the PR's code runs as (action/sandbox.py), said once when it is the
    action's own; and a warning for a credential a checkout step left readable."""
    workspace = ctx.settings.github.workspace or os.getcwd()
    user = sandbox.create(_protected(ctx), ctx.dirs.base)
    if user.gap is not None:
        outputs.command("warning", f"no isolation: {user.gap}")
        ctx.notes.append(f"⚠️ No isolation: {user.gap}.")
    for credential in sandbox.kept_credentials(Path(workspace)):
        outputs.command("warning", credential)
        ctx.notes.append(f"⚠️ {credential}.")
    return user


def main_user(ctx: Context, tree: Path) -> tuple[PrUser, dict[str, str]]:
    """A user for main's code in paired runs (action/merge_base.py), not the PR's: the PR's
    code ran as the PR's user and could have left anything in its folders for main's code
    to run. Main's requirements are installed for it: the requirements file at the same
    path in the merge-base's worktree (none there: none installed)."""
    settings = ctx.settings
    workspace = Path(settings.github.workspace or os.getcwd())
    requirements = None
    if settings.requirements is not None:
        given = Path(settings.requirements)
        inside = given if not given.is_absolute() else given.relative_to(workspace)
        if (tree / inside).is_file():
            requirements = str(tree / inside)
    user = sandbox.create(_protected(ctx), ctx.dirs.base)
    try:
        folder = ctx.dirs.given / "merge-base"
        folder.mkdir(mode=0o755, exist_ok=True)
        main = replace(settings, requirements=requirements)
        # in the worktree, with main's environment: local paths in main's requirements are
        # main's folders, never the PR's (whose setup.py would run as main's user)
        env = base_environment(user, (workspace, tree))
        added = install_requirements(main, ctx.children, user, folder, cwd=tree, env=env)
        return user, added
    except BaseException:
        user.remove()
        raise


def _protected(ctx: Context) -> list[str | None]:
    """The paths whose owners the PR's users must not be: the workspace, the file commands."""
    workspace = ctx.settings.github.workspace or os.getcwd()
    return [workspace, *(os.environ.get(name) for name in FILE_COMMANDS)]


def compare_and_publish(
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
    from ..pipeline.gate import Baseline, gate

    settings = ctx.settings
    try:
        pull, unreachable = _fresh_pull(ctx, target), None
    except GitHubError as err:  # after the retries: the verdict stands, nothing can be posted
        pull, unreachable = None, err
    outdated = pull is not None and pull.head_sha != target.head_sha
    labels = pull.labels if pull is not None else _event_labels(ctx.event)
    accepted, accepted_note = settings.accept_label in labels, None
    if isinstance(ctx.event, MergeGroupEvent) and target.number is None:
        accepted, accepted_note = _merge_group_accepted(ctx, ctx.event)
    diff = gate(
        results,
        Baseline(baseline.results, baseline.reason, baseline.older.plus(baseline.merge_base)),
        settings.gate,  # checked when the inputs were read
        accepted=accepted,
    )
    if accepted_note and diff.verdict.accepted:
        diff.verdict.notes.append(accepted_note)
    if baseline.results is None:
        outputs.command("warning", f"NO BASELINE: {baseline.reason}; judged by thresholds only")
    diff.verdict.notes.extend(ctx.notes)  # at the top too: what this run could not do
    options = report_options(settings, baseline.relation, report_url(settings, ctx.gh, ctx.event))
    if diff.verdict.trajectory_regressions or diff.verdict.response_regressions:
        options = replace(options, accept=_accept_offer(results, diff, ctx))  # label or not
    report = Report.of(diff, results, options)  # the comment, summary and check run's
    comment, summary = write_reports(
        ctx.out_dir,
        report,
        baseline=baseline.results,
        history=baseline.older,
        # the fork-safe comment job links the eval run's own report.html and uploads nothing:
        # rendering another (most of its time and memory at 100,000 cases) would be waste
        page=not isinstance(ctx.event, WorkflowRunEvent),
        room=outputs.summary_room(settings.github.step_summary),
    )
    outputs.append_summary(settings.github.step_summary, summary)
    code = EXIT_PASS if diff.verdict.passed else EXIT_GATE_FAILED
    if run_code == EXIT_INFRASTRUCTURE and not diff.verdict.passed:
        code = EXIT_INFRASTRUCTURE  # a Gemini outage, not the PR, kept the gate from a verdict
    comment_url = None
    if not post:
        print("mode compare: nothing posted; the report is in the job summary and output-dir")
    elif unreachable is not None:
        outputs.command(
            "warning",
            f"GitHub could not be reached to re-read the PR ({unreachable}): the comment and "
            "the check run were not posted; the report is in the job summary and output-dir",
        )
    elif outdated:
        assert pull is not None
        print(
            f"PR #{pull.number} has moved on to {pull.head_sha[:12]}; this run was for "
            f"{str(target.head_sha)[:12]}: posting nothing (the newer run reports)"
        )
    else:
        try:
            published = publish(ctx.gh, settings, target, report, comment, code != EXIT_PASS)
            comment_url = published.comment_url
        except GitHubError as err:  # unreachable after the retries: keep the gate's verdict
            outputs.command(
                "warning",
                f"GitHub could not be reached to post the report ({err}); the report is in "
                "the job summary and output-dir",
            )
    why = "; ".join(diff.verdict.reasons) or "nothing regressed"
    print(f"verdict: {'pass' if diff.verdict.passed else 'fail'} ({why})")
    said = set(ctx.notes)  # this run's own notes, warned of already
    for note in (n for n in diff.verdict.notes if n not in said):
        outputs.command("warning", note.removeprefix("⚠️ "))
    values = output_values(
        diff,
        results,
        settings,
        ctx.out_dir,
        shown=ctx.output_dir,
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


def _merge_group_accepted(ctx: Context, event: MergeGroupEvent) -> tuple[bool, str | None]:
    """Whether a PR of the merge group carries the accept label (action/merge_group.py), and
    the note that says which: the group's run cannot tell whose change a regression is."""
    if ctx.gh is None:
        return False, None
    from .merge_group import group_pulls

    pulls = group_pulls(ctx.gh, ctx.repo, event)
    label = ctx.settings.accept_label
    print(f"merge group of PR {', '.join(f'#{p.number}' for p in pulls) or '(none found)'}")
    carriers = [f"#{p.number}" for p in pulls if label in p.labels]
    if not carriers:
        return False, None
    return True, (
        f"☑️ Accepted by the label {label} on PR {', '.join(carriers)} of this merge group "
        f"(PRs {', '.join(f'#{p.number}' for p in pulls)})."
    )


def _event_labels(event: Event) -> tuple[str, ...]:
    return event.labels if isinstance(event, PullRequestEvent) else ()


def record_only(ctx: Context, results: Results, run_code: int) -> int:
    """Results written for upload (baseline, shard, plain run): summary and outputs."""
    from ..pipeline.gate import Baseline, gate

    reason = "this run records results; it is not compared"
    diff = gate(results, Baseline(None, reason), ctx.settings.gate.recording())
    diff.verdict.notes.extend(ctx.notes)
    options = report_options(ctx.settings, None, report_url(ctx.settings, ctx.gh, ctx.event))
    room = outputs.summary_room(ctx.settings.github.step_summary)
    _, summary = write_reports(ctx.out_dir, Report.of(diff, results, options), room=room)
    outputs.append_summary(ctx.settings.github.step_summary, summary)
    values = output_values(
        diff, results, ctx.settings, ctx.out_dir, shown=ctx.output_dir, passed=run_code == EXIT_PASS
    )
    outputs.write_outputs(ctx.settings.github.output, values)
    return run_code


def _accept_offer(results: Results, diff: Diff, ctx: Context) -> AcceptOffer | None:
    """What `accept` would rewrite in the checkout's eval files (accept/offer.py), its
    patches written into output-dir; None, said as a warning, when it cannot be made."""
    from ..accept.offer import offer

    try:
        return offer(results, diff, Path.cwd(), ctx.out_dir)
    except (OSError, ValueError, InputError, RecursionError) as err:  # an eval file unreadable
        # now, or nested deeper than the edit can follow (the loader's limit is looser)
        outputs.command("warning", f"no accept.patch: {err or type(err).__name__}")
        return None
