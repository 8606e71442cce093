"""The modes (docs/action.md, "Modes"): what the action does for each event, wired from the stages.

`mode: comment` never runs or imports project code: it reads a finished PR run's artifact.

Every Results a mode uses (the eval child's own, a PR run's artifact, a shard, a baseline)
is checked on loading (compare/sanity.py) and its scores against their metrics' ranges
(pipeline/bounds.py): a bad one is bad input (exit 2), a bad baseline is no baseline.
Where a Results came from (`source`: its repository, commit and run, which the report
links to) is never taken from an artifact: mode comment and mode merge set it from the
event and the runner (docs/security.md).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import EXIT_INFRASTRUCTURE, EXIT_PASS, InfrastructureError, InputError
from ..files import move, read_bytes
from ..pipeline.bounds import check_scores
from ..pipeline.paired import FILE_NAME as MERGE_BASE_FILE
from ..pipeline.paired import summary as paired_summary
from ..results import Results, Source
from . import outputs
from .baseline_source import BaselineQuery, ChosenBaseline, choose_baseline
from .context import Context
from .dispatch import DispatchedPull, check_dispatch, dispatched_pull, evaluated_commit
from .event import (
    MergeGroupEvent,
    Mode,
    PullRequestEvent,
    PushEvent,
    WorkflowDispatchEvent,
    WorkflowRunEvent,
)
from .pr_record import FILE_NAME as PR_FILE
from .pr_record import PrRecord
from .publish import Target
from .stages import compare_and_publish, record_only, run_suite

SHARD_ARTIFACT = "{name}-shard-"  # shard jobs upload `<baseline-artifact>-shard-<I>`


def _downloads(ctx: Context) -> tempfile.TemporaryDirectory[str]:
    """A scratch folder for artifacts, in the run folder (so that what is taken out of
    them is moved into it, not copied), removed when the block ends."""
    return tempfile.TemporaryDirectory(dir=ctx.out_dir, prefix=".artifacts-")


def _pr_target(ctx: Context) -> tuple[Target, BaselineQuery | None]:
    """The PR (or merge group) under test, and where its baseline is."""
    workflow, branch = ctx.own_workflow, ctx.default_branch
    match ctx.event:
        case PullRequestEvent() as pr:
            target = Target(pr.number, pr.head_sha)
            return target, BaselineQuery(pr.base_sha, pr.head_sha, branch, workflow)
        case MergeGroupEvent() as group:
            # the merge group's commit is the base plus the queued PRs: its base is the baseline
            target = Target(None, group.head_sha)
            return target, BaselineQuery(group.base_sha, None, branch, workflow)
        case WorkflowDispatchEvent(pr_number=int() as number):
            pull = _dispatched_pull(ctx, number)
            target = Target(number, pull.head_sha)
            return target, BaselineQuery(pull.base_sha, pull.head_sha, branch, workflow)
    sha = ctx.settings.github.sha
    if sha is None:
        return Target(None, None), None
    # a push or a dispatch without a PR: compare with the nearest older baseline
    return Target(None, None), BaselineQuery(sha, None, branch, workflow)


def _dispatched_pull(ctx: Context, number: int) -> DispatchedPull:
    """The PR a workflow_dispatch names, once its head is known to be what the evals run
    on (and not a fork's, unless allowed): else exit 2 before anything runs."""
    pull = dispatched_pull(ctx.require_gh("comparing with a PR's base"), ctx.repo, number)
    workspace = Path(ctx.settings.github.workspace or Path.cwd())
    evaluated, how = evaluated_commit(workspace, ctx.settings.github.sha)
    check_dispatch(
        pull,
        repo=ctx.repo,
        evaluated=evaluated,
        how=how,
        allow_fork=ctx.settings.allow_fork_dispatch,
    )
    return pull


def _own_results(ctx: Context, results: Results) -> Results:
    """The eval child's Results, its scores within their metrics' ranges."""
    check_scores(results, str(ctx.shown("results.json")))
    return results


def _artifact_results(taken: Path, path: Path) -> Results:
    """An artifact's results.json, taken out to the file `taken`, moved to `path` (renamed,
    never read into memory as a whole but by the loader, which maps it: the file is this
    job's own), loaded and checked."""
    from ..compare.loading import load_results

    move(taken, path)
    results = load_results(str(path), mapped=True)
    check_scores(results, str(path))
    return results


def _write_pr_record(ctx: Context, target: Target, query: BaselineQuery | None) -> None:
    if target.number is not None and target.head_sha is not None:
        base = query.start_sha if query else None
        PrRecord(target.number, target.head_sha, base).write(ctx.out_dir)


def mode_pr(ctx: Context, *, post: bool = True) -> int:
    target, query = _pr_target(ctx)
    _write_pr_record(ctx, target, query)
    baseline = choose_baseline(ctx.settings, ctx.gh, query, ctx.out_dir)
    if baseline.results is not None:
        print(f"baseline: {baseline.relation}")
    else:
        print(f"no baseline: {baseline.reason}")
    run_code, results = run_suite(ctx, baseline)
    results = _own_results(ctx, results)
    if ctx.settings.shard is not None:
        return record_only(ctx, results, _recorded(run_code))
    return compare_and_publish(ctx, results, baseline, target, run_code, post=post)


def mode_baseline(ctx: Context) -> int:
    """A push to the default branch: run, and write the results that become the baseline.
    The previous baseline, when there is one, lends its judge verdicts of unchanged answers
    (no new judge calls for them) and its case durations; nothing is gated on it."""
    previous = _previous_baseline(ctx)
    run_code, results = run_suite(ctx, previous, gate=False)
    results = _with_policy(ctx, _own_results(ctx, results))
    if ctx.settings.shard is None and previous is not None:
        _write_main_record(ctx, previous)
    if ctx.settings.shard is None and ctx.settings.baseline.kind == "branch":
        _store_on_data_branch(ctx, results)
    code = _recorded(run_code)
    record_only(ctx, results, code)
    if code == EXIT_PASS:
        print(f"baseline results written to {ctx.shown('results.json')} (upload them)")
    return code


def _with_policy(ctx: Context, results: Results) -> Results:
    """A baseline's score stage gates on nothing (`--fail-on never`); its Results record the
    policy of this step instead, the one later PRs are compared with (pipeline/gate.py)."""
    from ..pipeline.gate import with_policy

    results = with_policy(results, ctx.settings.gate)
    results.write(ctx.out_dir / "results.json")
    return results


def _recorded(run_code: int) -> int:
    """The exit of a run that only records its results (a baseline, a shard): they are not
    gated, so it passes once they are written, unless a fault kept it from a verdict."""
    return EXIT_INFRASTRUCTURE if run_code == EXIT_INFRASTRUCTURE else EXIT_PASS


def _previous_baseline(ctx: Context) -> ChosenBaseline | None:
    """The nearest older baseline of this commit; any trouble finding it is only a warning."""
    sha = ctx.settings.github.sha
    if sha is None or ctx.settings.baseline.kind in ("none", "path"):
        return None
    query = BaselineQuery(sha, None, ctx.default_branch, ctx.own_workflow)
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


def _write_main_record(ctx: Context, previous: ChosenBaseline) -> None:
    """Main's record as later pull requests read it with these Results as their baseline:
    the previous baseline, then its own older ones, `history` in all (compare/record_file.py),
    written beside results.json, so that it is uploaded in the same artifact."""
    from ..compare.record_file import RECORD_NAME, write_record

    if previous.results is None:
        return
    record = previous.older.then(previous.results, ctx.settings.history)
    write_record(ctx.out_dir / RECORD_NAME, record)
    print(f"main's record of {len(record.past)} older baselines written to {RECORD_NAME}")


def _store_on_data_branch(ctx: Context, results: Results) -> None:
    from ..github.databranch import DATA_BRANCH, MAX_RESULTS_BYTES, DataBranchError, store_results

    sha = results.source.sha or ctx.settings.github.sha
    if sha is None:
        raise InputError("GITHUB_SHA is not set: cannot store the baseline by commit")
    gh = ctx.require_gh("storing the baseline on a branch")
    path = ctx.out_dir / "results.json"
    try:
        data = read_bytes(path, str(ctx.shown(path.name)), MAX_RESULTS_BYTES)
        store_results(gh, ctx.repo, data_branch=DATA_BRANCH, sha=sha, data=data)
    except (DataBranchError, InputError) as err:
        raise InfrastructureError(f"the baseline was not stored on {DATA_BRANCH}: {err}") from None
    print(f"baseline results stored on the {DATA_BRANCH} branch for {sha[:12]}")


def mode_run(ctx: Context) -> int:
    run_code, results = run_suite(ctx, None)
    return record_only(ctx, _own_results(ctx, results), run_code)


def mode_comment(ctx: Context) -> int:
    """Fork-safe publishing from a `workflow_run`: the PR run's artifact, checked, posted."""
    from ..github.pulls import get_pull
    from . import pr_record
    from .event import run_head_moved
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
    source = f"artifact {name} of run {event.id}"
    results_path = ctx.out_dir / "results.json"
    with _downloads(ctx) as scratch:
        wanted = {"results.json", PR_FILE, MERGE_BASE_FILE}
        found = run_artifact_files(
            gh, ctx.repo, event.id, lambda n: n == name, wanted, Path(scratch)
        )
        if not found or "results.json" not in found[0].files:
            raise InfrastructureError(
                f"run {event.id} has no artifact {name} with results.json: nothing to post"
            )
        files = found[0].files
        if PR_FILE in files:
            record = pr_record.read(files[PR_FILE], source)
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
        # the run's head repository (by id), branch and commit, as the event names them:
        # another PR's is InputError (exit 2), a head that moved on since is exit 0
        moved = run_head_moved(event, pull)
        if moved is not None:
            print(moved)
            return EXIT_PASS
        workflow = ctx.settings.baseline_workflow or (
            event.workflow_path.rsplit("/", 1)[-1] if event.workflow_path else None
        )
        query = BaselineQuery(pull.base_sha, pull.head_sha, ctx.default_branch, workflow)
        # main's Results first: its older baselines are each read and folded while the
        # PR's Results are not loaded yet (a large suite's memory peak is these reads)
        baseline = choose_baseline(ctx.settings, gh, query, ctx.out_dir)
        try:
            results = _artifact_results(files["results.json"], results_path)
        except InputError as err:
            raise InputError(f"{source}: {err}") from None
        paired = files.get(MERGE_BASE_FILE)
        merge_base = _paired_runs(ctx, paired, source) if paired is not None else None
    # The artifact's `source` is the PR author's to write: the report links to the commit
    # and the run this job knows (the event's repository, the PR's head, the triggering run).
    trusted = Source(
        repo=ctx.repo,
        sha=pull.head_sha,
        ref=f"refs/pull/{pull.number}/merge",
        run_id=str(event.id),
        event=event.event,
    )
    results = results.replace(source=trusted)
    # the artifact's file goes first: the kernel then writes the new one into the page cache
    # it frees, which costs a tenth of taking fresh memory (0.1 s, not 0.9, at 250 MB)
    results_path.unlink()
    results.write(results_path)
    if merge_base is not None and baseline.results is not None:
        baseline.merge_base = merge_base  # as the PR run compared: main's newest history
        ctx.notes.append(f"🔀 {paired_summary(merge_base)}.")
    return compare_and_publish(ctx, results, baseline, Target(pull.number, pull.head_sha))


def _paired_runs(ctx: Context, taken: Path, source: str) -> Results | None:
    """The PR run's paired runs on the merge-base (merge-base.json, `paired: true`), which
    its comparison weighed as main's newest history, so that this job compares as it did.
    They are the PR run's to write, as its results.json is: one that cannot be read is left
    out, said at the top of the report and in a warning, never a failure of this job."""
    try:
        return _artifact_results(taken, ctx.out_dir / MERGE_BASE_FILE)
    except InputError as err:
        (ctx.out_dir / MERGE_BASE_FILE).unlink(missing_ok=True)
        said = f"{source}: {MERGE_BASE_FILE} left out, compared without its paired runs ({err})"
        outputs.command("warning", said)
        ctx.notes.append(f"⚠️ {said}.")
        return None


def mode_merge(ctx: Context) -> int:
    """The shards of this run, from their artifacts, merged, their confirmation re-runs
    with them; then as the event asks (a PR: compared and gated as a whole, the suite-level
    test over every case)."""
    from ..compare.merge import merge
    from .run_artifacts import run_artifact_files

    gh = ctx.require_gh("mode merge")
    run_id = ctx.settings.github.run_id
    if run_id is None:
        raise InputError("GITHUB_RUN_ID is not set: mode merge reads this run's artifacts")
    prefix = SHARD_ARTIFACT.format(name=ctx.settings.baseline_artifact)
    shard_dir = ctx.out_dir / "shards"
    shards = []
    with _downloads(ctx) as scratch:
        found = run_artifact_files(
            gh, ctx.repo, run_id, lambda n: n.startswith(prefix), {"results.json"}, Path(scratch)
        )
        for artifact in found:
            if "results.json" not in artifact.files:
                raise InfrastructureError(f"artifact {artifact.name} has no results.json")
            taken = artifact.files["results.json"]
            shard = _artifact_results(taken, shard_dir / f"{artifact.name}.json")
            shards.append((artifact.name, shard))
    if not shards:
        raise InfrastructureError(
            f"no shard artifacts named {prefix}<I> in run {run_id}: did the shard jobs upload them?"
        )
    merged = merge(shards)  # a missing shard is InfrastructureError (exit 3)
    # the shards ran in this workflow run: where they ran is the runner's to say, not theirs
    merged = merged.replace(source=ctx.settings.github.source())
    merged.write(ctx.out_dir / "results.json")
    if merged.partial:
        raise InfrastructureError("a shard was cancelled: its results are partial (kept)")
    print(f"merged {len(shards)} shards, {len(merged.cases)} cases")
    if isinstance(ctx.event, PushEvent) and ctx.event.to_default_branch:
        previous = _previous_baseline(ctx)
        if previous is not None:
            _write_main_record(ctx, previous)
        if ctx.settings.baseline.kind == "branch":
            _store_on_data_branch(ctx, merged)
        return record_only(ctx, merged, EXIT_PASS)
    target, query = _pr_target(ctx)
    _write_pr_record(ctx, target, query)
    baseline = choose_baseline(ctx.settings, gh, query, ctx.out_dir)
    return compare_and_publish(ctx, merged, baseline, target)


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
