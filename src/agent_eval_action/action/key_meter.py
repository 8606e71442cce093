"""Root's account of the job's calls on the judge's key (docs/security.md, "Caps").

Before any of the PR's code runs, root plans the suite as the stages will
(pipeline/key_budget.py: the most calls the plan may make, held within `judge-max-calls`),
which also refuses a judge model outside the allow-list (bad input, exit 2). Then every
process that holds the key (each agent stage's `serve-users`, each score stage; one after
another, never two at once) is given what the job has left (`--judge-max-calls`) and
writes back what it spent (`--key-spent`, a record in root's private folder, which only
root and those trusted processes can write). A process that wrote no record is taken to
have spent all it was given: the job's calls over every round stay within its budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import CaseKey
from ..errors import InputError
from ..metrics.judge.budget import read_spent
from . import outputs
from .settings import Settings

if TYPE_CHECKING:
    from ..pipeline.preview import Preview


@dataclass(frozen=True)
class JobPlan:
    """What root knows of the job before it runs: its case-runs (every shard's: an upper
    bound), the most calls it may make on the judge's key, and the cost preview of this
    run of it (pipeline/preview.py), which the log and the job summary show."""

    case_runs: int
    key_calls: int
    preview: Preview
    # the scenario cases, whose re-runs never start ahead (their user simulator spends the
    # judge's key: pipeline/ahead.py)
    scenario_cases: frozenset[CaseKey] = frozenset()


def plan_job(settings: Settings, *, confirms: bool, records: bool) -> JobPlan:
    """The job as root plans it from the eval files (InputError: bad input, exit 2).
    `confirms`: the run compares with a baseline; `records`: it records main's."""
    from ..pipeline.job import check_judge_models
    from ..pipeline.key_budget import most_calls
    from ..pipeline.options import RunOptions
    from ..pipeline.plan import plan
    from ..pipeline.preview import preview
    from ..pipeline.suite import load_suite

    options = RunOptions(
        num_runs=settings.num_runs,
        confirm_runs=settings.confirm_runs,
        confirm_limit=settings.confirm_limit,
        baseline_runs=settings.baseline_runs,
        paired=settings.paired,
        judge_model=settings.judge_model,
        judge_models=settings.judge_models,
        judge_max_calls=settings.judge_max_calls,
        config=settings.config,
        initial_session=settings.initial_session,
    )
    suite = load_suite(settings.evals, settings.config, settings.initial_session)
    # the PR's templates are rendered by the stages, never in this (root's own) process
    the_plan = plan(suite, settings.num_runs, import_custom=False, render_personas=False)
    check_judge_models(the_plan, options)
    return JobPlan(
        suite.case_count * settings.num_runs,
        most_calls(the_plan, options),
        preview(
            the_plan,
            options,
            confirms=confirms,
            records=records,
            whole_of_shard=settings.shard,
        ),
        frozenset(key for key, (_, case) in the_plan.cases.items() if case.conversation_scenario),
    )


def key_arguments(settings: Settings) -> list[str]:
    """What every process that holds the key is told of the judge's models."""
    argv = ["--judge-model", settings.judge_model] if settings.judge_model else []
    if settings.judge_models:
        argv += ["--judge-models", ",".join(settings.judge_models)]
    return argv


@dataclass
class KeyMeter:
    """The calls the job has `left` on the key; each stage's record of what it spent."""

    left: int
    private: Path
    given: dict[Path, int] = field(default_factory=dict)  # record -> what its stage got

    def arguments(self, name: str) -> tuple[list[str], Path]:
        """The flags of a process that holds the key (what is left, and where to say what
        it spent), and that record's path, named after its stage."""
        record = self.private / f"key-spent-{name}.json"
        record.unlink(missing_ok=True)  # only what this stage writes counts
        self.given[record] = self.left
        return ["--judge-max-calls", str(self.left), "--key-spent", str(record)], record

    def settle(self, record: Path, *, ran: bool = True) -> None:
        """Take what a finished stage spent off what is left: all it was given when it
        wrote no readable record; nothing when it never ran (`ran`: no key, no server)."""
        given = self.given.pop(record)
        if not ran:
            return
        try:
            spent = read_spent(record).calls
        except InputError as err:
            outputs.say(f"{err}: counted as all of its {given} calls spent")
            spent = given
        self.left = max(self.left - min(spent, given), 0)
