"""`run`: the whole pipeline in one process: run the agent, score, gate (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_INFRASTRUCTURE, EXIT_PASS
from . import args as common
from .output import add_html, add_report

if TYPE_CHECKING:
    from ..compare.model import Diff
    from ..core import CaseKey, Purpose
    from ..metrics.judge import JudgeResults
    from ..pipeline.gate import Baseline as BaselineRecord
    from ..pipeline.gate import GateOptions
    from ..pipeline.job import Job
    from ..pipeline.score import Scored
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
    common.add_gate_options(parser)
    common.add_paired(parser)
    common.add_recording(parser)
    add_output(parser)


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


def handle(args: argparse.Namespace) -> int:
    from ..pipeline.progress import Progress, quick_verdict
    from ..pipeline.run_cases import run_cases

    job, gate, runner = prepare(args, agent=True)
    assert runner is not None
    progress = Progress(len(job.plan.requests), verdict=quick_verdict(job.plan))
    with progress:
        case_runs = run_cases(job.plan, runner, on_trace=progress.on_trace, simulator=job.judge)
    return finish(args, job, case_runs, gate, runner=runner)


def prepare(
    args: argparse.Namespace, *, agent: bool = False
) -> tuple[Job, GateOptions, Runner | None]:
    """The job, the gate's options and (`agent`) the runner, every flag and file checked
    before any agent runs."""
    from ..pipeline.job import prepare as prepare_job
    from ..runners import runner_from_args

    shard = common.shard(args)
    gate = common.gate_options(args)
    if getattr(args, "record_baseline", False):
        gate = gate.recording()  # a baseline gates nothing
    runner = runner_from_args(args) if agent else None
    job = prepare_job(
        args.eval_paths,
        common.run_options(args),
        baseline=args.baseline,
        history=args.history,
        shard=shard,
        import_custom=agent,
    )
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
    from ..pipeline.score import score
    from .output import Printed, write_html

    empty_shard = job.shard is not None and not job.plan.suite.case_count
    source = GitHubEnv.from_env(os.environ).source()

    def scored_runs(runs: CaseRuns, before: JudgeResults | None = None) -> Scored:
        return score(
            job.plan,
            runs,
            job.options,
            judge=None if empty_shard else job.judge,
            baseline=job.baseline.results,
            source=source,
            shard=job.shard,
            warnings=job.warnings,
            judged_before=before,
            selection=job.selection,
            gate=gating.gate_policy(gate),
        )

    scored = scored_runs(case_runs)
    baseline, notes = _with_merge_base(args, job, source)
    paired = getattr(args, "paired", None) is not None
    if paired and (args.baseline is None or job.shard is not None):
        from ..pipeline.paired import IN_A_SHARD, NO_ROUNDS, SKIPPED

        notes = [SKIPPED.format(why=IN_A_SHARD if job.shard is not None else NO_ROUNDS)]
        print(f"note: {notes[0]}", file=sys.stderr)
    recording = getattr(args, "record_baseline", False)  # `run --record-baseline` (not `score`)
    if runner is not None and recording:
        scored = _sampled(job, ExtraRuns(job, case_runs, scored, runner, scored_runs))
    elif runner is not None and args.baseline is not None:
        scored, baseline, more = _confirmed(
            args, job, ExtraRuns(job, case_runs, scored, runner, scored_runs), gate, source,
            pair=paired and job.shard is None,
        )  # fmt: skip
        notes += more
    results = scored.results
    results.warnings.extend(notes)
    if recording:  # main's Results: the policy PRs are gated with, not this run's `never`
        results = gating.with_policy(results, common.gate_options(args))
    results.write(Path(args.out))
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


class ExtraRuns:
    """Rounds of extra runs with this process's runner (confirmation re-runs, main's
    sampling): each round the wanted cases once more, numbered after the suite's own and
    saying why they ran, then every run scored again (only the new ones judged)."""

    def __init__(
        self,
        job: Job,
        case_runs: CaseRuns,
        scored: Scored,
        runner: Runner,
        scored_runs: Callable[[CaseRuns, JudgeResults | None], Scored],
    ):
        self.job, self.runs, self.latest = job, case_runs, scored
        self.runner, self.scored_runs = runner, scored_runs

    def round(self, wanted: list[tuple[CaseKey, Purpose]], round_number: int) -> Results | None:
        """The round's Results, or None when it was cancelled."""
        from ..pipeline.confirm import confirmation_plan
        from ..pipeline.run_cases import run_cases
        from ..traces import CaseRuns

        plan = confirmation_plan(self.job.plan, wanted, self.job.plan.num_runs + round_number)
        new = run_cases(plan, self.runner, simulator=self.job.judge)
        self.runs = CaseRuns(
            self.runs.runner,
            self.runs.target,
            self.runs.started_at,
            [*self.runs.traces, *new.traces],
            self.runs.cancelled or new.cancelled,
            adk_version=self.runs.adk_version,
        )
        self.latest = self.scored_runs(self.runs, self.latest.judged)
        return None if new.cancelled else self.latest.results


def _sampled(job: Job, extra: ExtraRuns) -> Scored:
    """Main's sampling (pipeline/confirm.sampling_rounds): a recorded baseline's cases run
    again until main has `--baseline-runs` runs of each, counting --baseline's and
    --history's."""
    from ..pipeline.confirm import sampling_rounds

    if extra.latest.results.partial:
        return extra.latest
    added = sampling_rounds(
        extra.latest.results,
        known=job.baseline.known,
        runs=job.options.baseline_runs,
        sample=extra.round,
    )
    if added:
        print(f"main's sampling: {added} more case-run(s)", file=sys.stderr)
    return extra.latest


def _confirmed(
    args: argparse.Namespace,
    job: Job,
    extra: ExtraRuns,
    gate: GateOptions,
    source: Source,
    *,
    pair: bool,
) -> tuple[Scored, BaselineRecord, list[str]]:
    """Confirmation rounds (pipeline/confirm.py) with this process's runner, and with
    `--paired REF` the same cases on REF's code each round (cli/paired.py); (the scores,
    the baseline with the merge-base's Results as history, notes for the Results)."""
    from ..pipeline import gate as gating
    from ..pipeline import paired as pairing
    from ..pipeline.confirm import rounds
    from ..pipeline.paired import with_merge_base
    from .paired import PairedStage

    scored = extra.latest
    if job.options.confirm_runs < 1 or scored.results.partial:
        off = pair and job.options.confirm_runs < 1
        return scored, job.baseline, [pairing.SKIPPED.format(why=pairing.NO_ROUNDS)] if off else []
    main_known = job.baseline.known  # folded once; each round adds the merge-base's runs
    known = main_known
    baseline = job.baseline
    stage = PairedStage(args, job, source) if pair else None

    def confirm(
        wanted: list[tuple[CaseKey, Purpose]], round_number: int
    ) -> tuple[Diff, Results] | None:
        results = extra.round(wanted, round_number)
        if results is None:
            return None
        if stage is not None:
            nonlocal baseline, known
            grown = stage.round(wanted, job.plan.num_runs + round_number)
            if grown is not None:  # the merge-base's runs so far, in place of the earlier
                known = main_known.plus(grown)
                baseline = with_merge_base(job.baseline, grown)
        return gating.gate(results, baseline, gate), results

    try:
        _, warnings = rounds(
            gating.gate(scored.results, job.baseline, gate),
            scored.results,
            known=lambda: known,
            runs=job.options.confirm_runs,
            limit=job.options.confirm_limit,
            confirm=confirm,
        )
    finally:
        if stage is not None:
            stage.close()
    latest = extra.latest
    latest.results.warnings.extend(warnings)
    if stage is not None and stage.side is not None and stage.side.results is not None:
        print(f"note: {pairing.summary(stage.side.results)}", file=sys.stderr)
    return latest, baseline, [stage.note] if stage is not None and stage.note else []
