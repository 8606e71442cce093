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

The rounds' order and decisions are pipeline/ahead.Rounds, which the action drives too,
with stages of its own (action/agent_run.py: each a child process); here its stages run
in process. argparse stays in cli/.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..results import Results, Source
from .ahead import Limits, Rounds, Stages, Taken
from .gate import Baseline, GateOptions, gate, gate_policy
from .score import Scored, score

if TYPE_CHECKING:
    from ..compare.record import MainRecord
    from ..core import CaseKey, RunKey
    from ..metrics.judge import JudgeResults
    from ..runners import Runner
    from ..traces import CaseRuns, CaseRunTrace
    from .confirm import Wanted
    from .job import Job


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
        limits = Limits(
            job.plan.num_runs,
            options.concurrency,
            options.confirm_runs,
            options.confirm_limit,
            options.baseline_runs,
        )
        self.rounds = Rounds(Stages(self._run, self._record, self._scenario), limits)
        self.cancelled = False  # the latest round's agent stage was
        self.paired: PairedRound | None = None  # during confirmation rounds, with `--paired`
        self.known: MainRecord = job.baseline.known  # main's record, with the merge-base's runs
        self.baseline = job.baseline  # with the merge-base's Results as its newest history

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

    def _run(self, need: Wanted, run: int, ahead: int) -> dict[RunKey, CaseRunTrace]:
        """Run `run` of each needed case and its next `ahead` runs, in process: the traces
        (what finished, when cancelled)."""
        from .confirm import confirmation_plan
        from .run_cases import run_cases

        assert self.runner is not None
        job = self.job
        plan = confirmation_plan(job.plan, need, run, ahead)
        new = run_cases(plan, self.runner, simulator=job.judge)
        self.cancelled = new.cancelled
        return {trace.run_key: trace for trace in new.traces}

    def _record(self, taken: Taken[CaseRunTrace], run: int, wanted: Wanted) -> Results | None:
        """The round's runs, each saying why the round ran it, added to the run's and every
        run scored again (only the new ones judged); with paired runs, main's side of the
        round: the round's Results, or None when cancelled."""
        from ..traces import CaseRuns

        assert self.runs is not None and self.latest is not None
        cancelled, self.cancelled = self.cancelled, False
        traces = [trace.model_copy(update={"purpose": why}) for _, why, trace in taken]
        self.runs = CaseRuns(
            self.runs.runner,
            self.runs.target,
            self.runs.started_at,
            [*self.runs.traces, *traces],
            self.runs.cancelled or cancelled,
            adk_version=self.runs.adk_version,
        )
        self.latest = self.score(self.runs, self.latest.judged)
        if cancelled:
            return None
        if self.paired is not None:
            from .paired import with_merge_base

            grown = self.paired.round(wanted, run)
            if grown is not None:  # the merge-base's runs so far, in place of the earlier
                self.known = self.job.baseline.known.plus(grown)
                self.baseline = with_merge_base(self.job.baseline, grown)
        return self.latest.results

    def _scenario(self, key: CaseKey) -> bool:
        return self.job.plan.cases[key][1].conversation_scenario is not None

    def sample(self) -> Scored:
        """Main's sampling (pipeline/confirm.sampling_rounds): a recorded baseline's cases run
        again until main has `baseline_runs` runs of each, counting the baseline's and the
        history's."""
        assert self.latest is not None
        if not self.latest.results.partial:
            self.rounds.sample(self.latest.results, self.job.baseline.known)
        return self.latest

    def confirm(self, paired: PairedRound | None = None) -> tuple[Scored, Baseline]:
        """Confirmation and suite rounds (pipeline/confirm.rounds) against the baseline, and
        with `paired` the same cases on main's code each round; (the scores, the baseline with
        the merge-base's Results as its newest history)."""
        assert self.latest is not None
        job, scored = self.job, self.latest
        if job.options.confirm_runs < 1 or scored.results.partial:
            return scored, job.baseline
        self.paired = paired
        try:
            warnings = self.rounds.confirm(
                gate(scored.results, job.baseline, self.gate_options),
                scored.results,
                known=lambda: self.known,
                compare=lambda results: gate(results, self.baseline, self.gate_options),
            )
        finally:
            self.paired = None
        self.latest.results.warnings.extend(warnings)
        return self.latest, self.baseline
