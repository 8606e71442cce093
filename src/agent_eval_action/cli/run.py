"""`run`: the whole pipeline in one process: run the agent, score, gate (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_INFRASTRUCTURE, EXIT_PASS
from . import args as common
from .output import add_html, add_report

if TYPE_CHECKING:
    from ..pipeline.gate import Baseline as BaselineRecord
    from ..pipeline.gate import GateOptions
    from ..pipeline.job import Job
    from ..pipeline.preview import Preview
    from ..pipeline.score import Scored
    from ..pipeline.session import Session
    from ..results import Results, Source
    from ..runners import Runner
    from ..traces import CaseRuns

FORMATS = ("table", "markdown", "summary", "json")
# `--out` names the Results: one named like a report gets a note pointing to --report
REPORT_SUFFIXES = (".md", ".markdown", ".txt", ".html")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_eval_paths(parser)
    common.add_agent(parser)
    common.add_run_options(parser)
    common.add_hermetic(parser)
    common.add_gate_options(parser)
    common.add_paired(parser)
    common.add_recording(parser)
    add_output(parser)
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print what this run would do and the most it may spend (case-runs, re-runs, "
        "calls and tokens on the judge's key, the caps), then stop: no agent is started, "
        "Gemini is not called, nothing is written",
    )


def add_output(parser: argparse.ArgumentParser) -> None:
    common.add_report_options(parser, FORMATS)
    parser.add_argument(
        "--out",
        default="results.json",
        type=common.output_file,
        metavar="FILE",
        help="where to write the Results (default results.json); diff.json goes beside it",
    )
    add_report(parser)
    add_html(parser)


# what --plan cannot honour: it runs nothing and writes nothing
NOT_WITH_PLAN = {
    "report": "--report",
    "html": "--html",
    "key_spent": "--key-spent",
    "adk_history": "--adk-history (it scores runs already made)",
}


def handle(args: argparse.Namespace) -> int:
    from ..pipeline.preview import first_line
    from ..pipeline.progress import Progress, quick_verdict
    from ..pipeline.run_cases import run_cases

    if getattr(args, "paired", None) is not None:
        print(f"warning: {paired_deprecated()}", file=sys.stderr)
    if args.plan:
        return plan(args)
    job, gate, runner = prepare(args, agent=True)
    assert runner is not None
    print(first_line(preview(args, job)), file=sys.stderr)
    progress = Progress(len(job.plan.requests), verdict=quick_verdict(job.plan))
    with progress:
        case_runs = run_cases(job.plan, runner, on_trace=progress.on_trace, simulator=job.judge)
    return finish(args, job, case_runs, gate, runner=runner)


def paired_deprecated() -> str:
    """`run --paired`'s deprecation (pipeline/paired.py): stderr when the run starts, and
    the Results' warnings."""
    from ..pipeline.paired import DEPRECATED

    return DEPRECATED.format(what="run --paired")


def plan(args: argparse.Namespace) -> int:
    """`run --plan`: the preview of this run, on stdout; nothing run, nothing written."""
    from ..errors import InputError
    from ..pipeline.preview import lines

    given = [flag for name, flag in NOT_WITH_PLAN.items() if getattr(args, name, None)]
    if given:
        raise InputError(f"--plan runs nothing and writes nothing: it cannot take {given[0]}")
    job, _, _ = prepare(args)
    for line in lines(preview(args, job)):
        print(line)
    return EXIT_PASS


def preview(args: argparse.Namespace, job: Job) -> Preview:
    """The preview of this run's job (pipeline/preview.py)."""
    from ..pipeline.preview import preview as of

    records = bool(getattr(args, "record_baseline", False))
    return of(job.plan, job.options, confirms=args.baseline is not None, records=records)


def prepare(
    args: argparse.Namespace, *, agent: bool = False
) -> tuple[Job, GateOptions, Runner | None]:
    """The job, the gate's options and (`agent`) the runner, every flag and file checked
    before any agent runs."""
    from ..pipeline.hermetic import check_flags, hermetic_tools
    from ..pipeline.job import prepare as prepare_job
    from ..runners import runner_for

    shard = common.shard(args)
    gate = common.gate_options(args)
    if getattr(args, "record_baseline", False):
        gate = gate.recording()  # a baseline gates nothing
    options = common.run_options(args)
    check_flags(options, agent=getattr(args, "agent", None) is not None, baseline=args.baseline)
    runner = runner_for(common.agent_choice(args)) if agent else None
    job = prepare_job(
        args.eval_paths,
        options,
        baseline=args.baseline,
        history=args.history,
        shard=shard,
        import_custom=agent,
    )
    tools = hermetic_tools(options, job.plan, job.baseline, job.warnings) if agent else None
    if tools is not None:
        runner = runner_for(common.agent_choice(args), tools)
    return job, gate, runner


def finish(
    args: argparse.Namespace,
    job: Job,
    case_runs: CaseRuns,
    gate: GateOptions,
    *,
    runner: Runner | None = None,
) -> int:
    """Score the case-runs, write the Results, print, and gate: shared by `run` and `score`.
    With the agent's `runner` at hand (`run`), a regression is confirmed by re-runs first."""
    import os

    from ..github.env import GitHubEnv
    from ..pipeline import gate as gating
    from ..pipeline.session import Session
    from .output import Printed, write_html

    empty_shard = job.shard is not None and not job.plan.suite.case_count
    source = GitHubEnv.from_env(os.environ).source()
    session = Session(job, gate, source, runner=runner, judge=not empty_shard)
    scored = session.start(case_runs)
    baseline, notes = _with_merge_base(args, job, source)
    paired = getattr(args, "paired", None) is not None
    if paired and (args.baseline is None or job.shard is not None):
        from ..pipeline.paired import IN_A_SHARD, NO_ROUNDS, SKIPPED

        notes = [SKIPPED.format(why=IN_A_SHARD if job.shard is not None else NO_ROUNDS)]
        print(f"note: {notes[0]}", file=sys.stderr)
    recording = getattr(args, "record_baseline", False)  # `run --record-baseline` (not `score`)
    if runner is not None and recording:
        scored = session.sample()
    elif runner is not None and args.baseline is not None:
        scored, baseline, more = _confirmed(args, job, session, pair=paired and job.shard is None)
        notes += more
    if paired:
        notes.append(paired_deprecated())
    results = scored.results
    results.warnings.extend(notes)
    if recording:  # main's Results: the policy PRs are gated with, not this run's `never`
        results = gating.with_policy(results, common.gate_options(args))
    results.write(Path(args.out))
    spent(args, job)
    if job.shard is not None and args.baseline is not None:
        _shard_diff(args, job, results, gate)
    print(job.configs, file=sys.stderr)
    print(f"results: {args.out}", file=sys.stderr)
    if args.report is None and Path(args.out).suffix in REPORT_SUFFIXES:
        print(
            f"note: --out {args.out} holds the Results (JSON); --report FILE writes the report",
            file=sys.stderr,
        )
    if empty_shard:
        assert job.shard is not None
        print(
            f"shard {job.shard.index}/{job.shard.count} has no cases (the suite has "
            f"{job.shard.cases_total}); wrote its empty Results to {args.out}",
            file=sys.stderr,
        )
        return EXIT_PASS
    with Printed(args.report) as out:  # stdout, or --report FILE once all of it is made
        if args.format == "json":
            out.record(results)
        elif args.format == "table":
            from ..report.console import table

            # the why of each failing case here when no comparison follows (it has its own)
            out.text(table(results, why=args.baseline is None, html=args.html))
        if results.partial:
            print(f"error: cancelled; partial results written to {args.out}", file=sys.stderr)
            return EXIT_INFRASTRUCTURE
        if job.shard is not None and args.baseline is not None:
            return gating.judged_code(results, scored.judged, EXIT_PASS)  # the merge gates
        code = gating.threshold_code(results)
        if args.baseline is not None:
            diff = gating.gate(results, baseline, gate)
            diff_path = Path(args.out).with_name("diff.json")
            diff.write(diff_path)  # a few cases at a time: a large Diff is never one str
            print(f"comparison: {diff_path}", file=sys.stderr)
            if args.format == "table":
                from ..report.diff_console import table as diff_table

                out.text("\n" + diff_table(diff, html=args.html))
            elif args.format != "json":
                from .output import report

                out.text(report(diff, results, args))
            code = gating.verdict_code(diff)
            if advice := gating.noise_advice(diff, job.options):
                print(f"note: {advice}", file=sys.stderr)
            write_html(diff, results, baseline, args)
        elif args.format in ("markdown", "summary") or args.html:
            from ..compare import compare

            alone = compare(results, None, no_baseline_reason="no --baseline was given")
            if args.format in ("markdown", "summary"):
                from .output import report

                out.text(report(alone, results, args))
            write_html(alone, results, job.baseline, args)
    if recording:
        code = EXIT_PASS  # recorded, gated on nothing (not even its thresholds)
    return gating.judged_code(results, scored.judged, code)


def spent(args: argparse.Namespace, job: Job) -> None:
    """--key-spent FILE: what this process spent of its calls on the judge's key (none when
    nothing needed the key)."""
    if getattr(args, "key_spent", None) is None:
        return
    from ..metrics.judge.budget import KeyBudget

    budget = job.judge.budget if job.judge is not None else KeyBudget(args.judge_max_calls)
    budget.write(Path(args.key_spent))


def _with_merge_base(
    args: argparse.Namespace, job: Job, source: Source
) -> tuple[BaselineRecord, list[str]]:
    """The baseline, and `score --merge-base-traces`' merge-base Results as its newest
    history entry (cli/paired.py); (baseline, notes for the Results)."""
    from ..pipeline.paired import with_merge_base
    from .paired import scored_side

    side = scored_side(args, job, source)
    return with_merge_base(job.baseline, side.results if side else None), []


def _shard_diff(args: argparse.Namespace, job: Job, results: Results, gate: GateOptions) -> None:
    """A shard's own cases against the baseline without the other shards' (pipeline/shard.py),
    in diff.json beside its Results: what its confirmation rounds read. It gates nothing: the
    suite-level test and the verdict need the whole suite, merged."""
    from ..compare.model import REGRESSIONS
    from ..pipeline import gate as gating

    assert job.shard is not None
    diff = gating.gate(results, job.baseline, gate)
    diff.write(Path(args.out).with_name("diff.json"))
    own = {case.key for case in results.cases}
    regressed = sum(
        case.change in REGRESSIONS for case in diff.cases if (case.eval_set_id, case.eval_id) in own
    )
    print(
        f"shard {job.shard.index}/{job.shard.count}: {regressed} of its {len(own)} cases "
        "regressed against the baseline; not gated (a shard is not the whole suite): merge "
        "the shards' Results, then compare",
        file=sys.stderr,
    )


def _confirmed(
    args: argparse.Namespace, job: Job, session: Session, *, pair: bool
) -> tuple[Scored, BaselineRecord, list[str]]:
    """The session's confirmation rounds, and with `--paired REF` the same cases on REF's
    code each round (cli/paired.py); (the scores, the baseline with the merge-base's
    Results as history, notes for the Results)."""
    from ..pipeline import paired as pairing
    from .paired import PairedStage

    assert session.latest is not None
    if job.options.confirm_runs < 1 or not pair or session.latest.results.partial:
        scored, baseline = session.confirm()
        off = pair and job.options.confirm_runs < 1
        return scored, baseline, [pairing.SKIPPED.format(why=pairing.NO_ROUNDS)] if off else []
    stage = PairedStage(args, job, session.source)
    try:
        scored, baseline = session.confirm(stage)
    finally:
        stage.close()
    if stage.side is not None and stage.side.results is not None:
        print(f"note: {pairing.summary(stage.side.results)}", file=sys.stderr)
    return scored, baseline, [stage.note] if stage.note else []
