"""The merge-base's side of `run --paired REF` and of `score --merge-base-traces FILE`
(pipeline/paired.py): its traces, its Results in merge-base.json, and the agent stage that
runs main's code in a worktree (a `run-cases` child, so that an `--agent` package of the
same name as the PR's is imported afresh)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import launch
from ..errors import EXIT_PASS
from ..files import write_whole
from ..pipeline import paired as pairing

if TYPE_CHECKING:
    from ..core import CaseKey, Purpose
    from ..metrics.judge import JudgeResults
    from ..pipeline.job import Job
    from ..pipeline.plan import Plan
    from ..results import Results, Source


@dataclass
class MergeBaseSide:
    """The merge-base's runs so far: their traces files, each with its round's plan, and
    the Results scored from them."""

    sha: str
    out: Path  # merge-base.json, beside results.json
    traces: list[tuple[Path, Plan]] = field(default_factory=list)
    results: Results | None = None
    judged: JudgeResults | None = None

    def rescore(self, job: Job, target: str | None, source: Source) -> Results:
        scored = pairing.score_merge_base(
            job,
            self.traces,
            self.sha,
            target=target,
            judge=job.judge,
            judged_before=self.judged,
            source=source,
        )
        self.judged, self.results = scored.judged, scored.results
        scored.results.write(self.out)
        print(f"merge-base runs: {self.out}", file=sys.stderr)
        return scored.results


def merge_base_rounds(args: argparse.Namespace, plan: Plan) -> list[tuple[Path, Plan]]:
    """`score --merge-base-traces FILE --merge-base-round PLAN … --merge-base SHA`: each of
    the merge-base's traces files with its round's plan, checked (InputError)."""
    from ..errors import InputError
    from . import args as common

    files = getattr(args, "merge_base_traces", None) or []
    plans = getattr(args, "merge_base_rounds", None) or []
    if files and not getattr(args, "merge_base", None):
        raise InputError("--merge-base-traces needs --merge-base SHA (the commit they ran)")
    return common.rounds(plan, files, plans, "--merge-base-round")


def scored_side(args: argparse.Namespace, job: Job, source: Source) -> MergeBaseSide | None:
    """`score --merge-base-traces FILE --merge-base-round PLAN --merge-base SHA`: the
    merge-base's runs that the action's agent stages wrote, scored into merge-base.json
    (None: none were given)."""
    files = merge_base_rounds(args, job.plan)
    if not files:
        return None
    side = MergeBaseSide(args.merge_base, Path(args.out).with_name(pairing.FILE_NAME), files)
    side.rescore(job, None, source)
    return side


def target_of(args: argparse.Namespace) -> tuple[str, str | None]:
    """(which agent flag was given, its value)."""
    for flag in ("agent", "command", "adk_api", "adk_history"):
        value = getattr(args, flag, None)
        if value is not None:
            return flag.replace("_", "-"), value if isinstance(value, str) else None
    return "none", None


class PairedStage:
    """`run --paired REF`: each confirmation round's cases once more on REF's code."""

    def __init__(self, args: argparse.Namespace, job: Job, source: Source) -> None:
        self.args, self.job, self.source = args, job, source
        self.flag, self.value = target_of(args)
        self.note: str | None = None
        self.side: MergeBaseSide | None = None
        self.scratch: Path | None = None
        self.worktree: pairing.Worktree | None = None
        found = pairing.find(args.paired, Path.cwd(), self.flag)
        if isinstance(found, str):
            self.stop(found)
            return
        self.commit = found
        print(f"paired runs on the merge-base {found.sha[:12]}", file=sys.stderr)
        self.scratch = Path(tempfile.mkdtemp(prefix="agent-eval-paired-"))
        self.worktree = pairing.Worktree(found, self.scratch)
        self.side = MergeBaseSide(found.sha, Path(args.out).with_name(pairing.FILE_NAME))

    def stop(self, note: str) -> None:
        """No more paired runs; the note goes to stderr now and to the Results' warnings."""
        self.note = note
        print(f"note: {note}", file=sys.stderr)

    @property
    def on(self) -> bool:
        return self.note is None and self.side is not None

    def round(self, wanted: Sequence[tuple[CaseKey, Purpose]], run: int) -> Results | None:
        """Run `run` of the wanted cases on the merge-base's code and rescore its side; the
        grown Results, or None when paired runs stopped (the note says why)."""
        from ..pipeline.confirm import confirmation_plan, round_json

        # scenario cases need the user simulator, which only this process has: main's side
        # of them would be "not run", no record of main at all
        wanted = [(k, w) for k, w in wanted if self.job.plan.cases[k][1].conversation_scenario is None]  # fmt: skip
        if not self.on or not wanted:
            return None
        assert self.worktree is not None and self.scratch is not None and self.side is not None
        tree = self.worktree.open()
        if isinstance(tree, str):
            self.stop(tree)
            return None
        there = pairing.agent_there(
            self.flag, str(self.value), Path.cwd(), self.worktree.commit, tree
        )
        if isinstance(there, str):
            self.stop(there)
            return None
        flags, start = there
        plan = self.scratch / f"round-{run}.json"
        paired_cases = pairing.paired(wanted, self.side.sha)
        write_whole(plan, round_json(run, paired_cases))
        traces = self.scratch / f"traces-{run}.jsonl"
        argv = launch.tool("run-cases", *stage_arguments(self.args))
        argv += [*flags, "--agent-cwd", str(start), "--traces", str(traces), "--confirm", str(plan)]
        print(f"running {len(paired_cases)} case(s) on the merge-base's code", file=sys.stderr)
        # an isolated child reads no PYTHONPATH: the agent's folders go as launch says
        env = {
            **os.environ,
            "AGENT_EVAL_PROGRESS": "lines",
            launch.AGENT_PATH_ENV: launch.agent_path(),
        }
        code = launch.run(
            launch.Kind.TOOL, argv, env=env, check=False, stdin=subprocess.DEVNULL
        ).returncode
        if code != EXIT_PASS or not traces.exists():
            self.stop(pairing.STOPPED.format(code=code))
            return None
        self.side.traces.append((traces, confirmation_plan(self.job.plan, paired_cases, run)))
        return self.side.rescore(self.job, self.value, self.source)

    def close(self) -> None:
        if self.worktree is not None:
            self.worktree.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def stage_arguments(args: argparse.Namespace) -> list[str]:
    """What `run-cases` is told of the suite, from `run`'s flags."""
    argv = [*args.eval_paths, "--num-runs", str(args.num_runs)]
    argv += ["--concurrency", str(args.concurrency), "--timeout", repr(args.timeout)]
    for flag, value in (
        ("--config", args.config),
        ("--trajectory-policy", args.trajectory_policy),
        ("--initial-session", args.initial_session),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if args.strip_thoughts:
        argv.append("--strip-thoughts")
    # the merge-base's runs answer tool calls as the PR's do (docs/hermetic-tools.md)
    if args.tools_from_eval_file:
        argv.append("--tools-from-eval-file")
    if args.replay_tools:  # `run` refused it without --baseline
        argv += ["--replay-tools", "--baseline", str(Path(args.baseline).resolve())]
    if args.replay_strict:
        argv.append("--replay-strict")
    return argv
