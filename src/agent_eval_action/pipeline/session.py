"""What a run does after its agent stage, in one order for `run` and the pytest route: score,
then the rounds its runner allows (docs/statistics.md) — confirmation and suite rounds
against a baseline, or main's sampling when it records one — each running the wanted cases
once more, scoring every run again and judging only the new ones (a question the run
judged before is not asked again: pipeline/judge.py).

Confirmation re-runs use idle slots: a round that re-runs fewer cases than `concurrency`
also starts, at once, the later re-runs those cases may still need (within `confirm_limit`).
Each round still decides from its own run alone, in run order, exactly as one re-run a
round would (the early stop at the first re-run that does not show a regression again,
the futility check before each): a run started ahead is taken only by the round that would
have made it, and those no round took are discarded, never recorded, so the Results say
what decided and `compare` from the files gives the same verdict. "Made" counts every
re-run started, "used" those recorded. Suite rounds and main's sampling stay one run a
round; scenario cases (whose user simulator spends the judge's key) never run ahead.

The action runs the same rounds as stages of their own (action/agent_run.py), each in its
own process, with the same bookkeeping of re-runs ahead (pipeline/ahead.py); argparse
stays in cli/.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol

from ..results import Results, Source
from .ahead import Ahead
from .gate import Baseline, GateOptions, gate, gate_policy
from .score import Scored, score

if TYPE_CHECKING:
    from ..compare.model import Diff
    from ..metrics.judge import JudgeResults
    from ..runners import Runner
    from ..traces import CaseRuns, CaseRunTrace
    from .confirm import Wanted
    from .job import Job
    from .plan import Plan


class PairedRound(Protocol):
    """Main's code run beside each confirmation round (`run --paired`: cli/paired.py)."""

    def round(self, wanted: Wanted, run: int) -> Results | None:
        """The merge-base's Results with this round's runs, or None: none to add."""


class Session:
    """One run's scoring and extra rounds. `judge`: False for a shard without cases."""

    def __init__(
        self,
        job: Job,
        gate_options: GateOptions,
        source: Source,
        *,
        runner: Runner | None = None,
        judge: bool = True,
    ) -> None:
        self.job, self.gate_options, self.source = job, gate_options, source
        self.runner, self.judge = runner, judge
        self.runs: CaseRuns | None = None
        self.latest: Scored | None = None
        options = job.options
        self.ahead: Ahead[CaseRunTrace] = Ahead(  # re-runs started on idle slots
            options.concurrency, options.confirm_runs, options.confirm_limit
        )

    def score(self, runs: CaseRuns, before: JudgeResults | None = None) -> Scored:
        job = self.job
        return score(
            job.plan,
            runs,
            job.options,
            judge=job.judge if self.judge else None,
            baseline=job.baseline.results,
            source=self.source,
            shard=job.shard,
            warnings=job.warnings,
            judged_before=before,
            selection=job.selection,
            gate=gate_policy(self.gate_options),
        )

    def start(self, case_runs: CaseRuns) -> Scored:
        """Score the agent stage's runs."""
        self.runs, self.latest = case_runs, self.score(case_runs)
        return self.latest

    def round(self, wanted: Wanted, round_number: int) -> Results | None:
        """The wanted cases once more, numbered after the suite's own runs and saying why
        they ran, then every run scored again: the round's Results, or None when cancelled."""
        from ..traces import CaseRuns
        from .run_cases import run_cases

        assert self.runner is not None and self.runs is not None and self.latest is not None
        job = self.job
        run = job.plan.num_runs + round_number
        held, need = self.ahead.take(wanted, run)
        taken = [trace.model_copy(update={"purpose": why}) for _, why, trace in held]
        cancelled = False
        if need:
            new = run_cases(self._plan(need, run, round_number), self.runner, simulator=job.judge)
            cancelled = new.cancelled
            later = {trace.run_key: trace for trace in new.traces if trace.run != run}
            taken += [trace for trace in new.traces if trace.run == run]
            self.ahead.started(len(new.traces), later)
        self.runs = CaseRuns(
            self.runs.runner,
            self.runs.target,
            self.runs.started_at,
            [*self.runs.traces, *taken],
            self.runs.cancelled or cancelled,
            adk_version=self.runs.adk_version,
        )
        self.latest = self.score(self.runs, self.latest.judged)
        return None if cancelled else self.latest.results

    def _plan(self, need: Wanted, run: int, round_number: int) -> Plan:
        """Run `run` of each needed case and, on slots the round leaves idle, the later
        confirmation re-runs it may still need (pipeline/confirm.rounds asks for at most
        `confirm_runs`), all within `confirm_limit`."""
        from .confirm import confirmation_plan

        job = self.job
        scenario = any(job.plan.cases[key][1].conversation_scenario for key, _ in need)
        ahead = self.ahead.extent(need, round_number, scenario=scenario)
        return confirmation_plan(job.plan, need, run, ahead)

    def sample(self) -> Scored:
        """Main's sampling (pipeline/confirm.sampling_rounds): a recorded baseline's cases run
        again until main has `baseline_runs` runs of each, counting the baseline's and the
        history's."""
        from .confirm import sampling_rounds

        assert self.latest is not None
        if self.latest.results.partial:
            return self.latest
        added = sampling_rounds(
            self.latest.results,
            known=self.job.baseline.known,
            runs=self.job.options.baseline_runs,
            sample=self.round,
        )
        if added:
            print(f"main's sampling: {added} more case-run(s)", file=sys.stderr)
        return self.latest

    def confirm(self, paired: PairedRound | None = None) -> tuple[Scored, Baseline]:
        """Confirmation and suite rounds (pipeline/confirm.rounds) against the baseline, and
        with `paired` the same cases on main's code each round; (the scores, the baseline with
        the merge-base's Results as its newest history)."""
        from .confirm import rounds
        from .paired import with_merge_base

        assert self.latest is not None
        job, scored = self.job, self.latest
        if job.options.confirm_runs < 1 or scored.results.partial:
            return scored, job.baseline
        main_known = job.baseline.known  # folded once; each round adds the merge-base's runs
        known, baseline = main_known, job.baseline

        def confirm(wanted: Wanted, round_number: int) -> tuple[Diff, Results] | None:
            nonlocal baseline, known
            results = self.round(wanted, round_number)
            if results is None:
                return None
            if paired is not None:
                grown = paired.round(wanted, job.plan.num_runs + round_number)
                if grown is not None:  # the merge-base's runs so far, in place of the earlier
                    known = main_known.plus(grown)
                    baseline = with_merge_base(job.baseline, grown)
            return gate(results, baseline, self.gate_options), results

        _, warnings = rounds(
            gate(scored.results, job.baseline, self.gate_options),
            scored.results,
            known=lambda: known,
            runs=job.options.confirm_runs,
            limit=job.options.confirm_limit,
            confirm=confirm,
        )
        self.ahead.finish()
        self.latest.results.warnings.extend(warnings)
        return self.latest, baseline
