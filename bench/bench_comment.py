"""The fork-safe comment job (`mode: comment`, action/modes.py) on a large PR run, end to end.

    python bench/bench_comment.py                 # 100,000 cases, best of 3
    python bench/bench_comment.py --history 10    # with main's older baselines, as the action
                                                  # fetches them by default
    python bench/bench_comment.py --versus 10000  # and the 10,000-case yardstick, timed
                                                  # just before each run of the job

Issue 16, item 4: a 100,000-case run posts its comment within the records' targets
(peak RSS <= 1 GB, <= 12x the 10,000-case `compare --format markdown` time). Set up as
in tests/test_action_e2e.py's fork test, against the fake GitHub of tests/fakes/ on
127.0.0.1: a baseline artifact on main's push run, a PR run whose artifact holds the
PR's Results (one case in 50 regressed, as bench_compare.py builds them) and its pr.json,
and the `workflow_run` event. Timed: the whole action process (`agent-eval-action action`,
mode comment): downloading both artifacts, checking and loading both Results, comparing,
rendering and posting the comment, the check run and the job summary. With --history N,
main's history goes N push runs further back, each with a baseline artifact of its own
(other texts: no run of one matches another's), which the job downloads and loads too. Its
wall time and its own peak RSS (VmHWM, printed by the process as it exits), the best of
--repeat runs. With --versus N the yardstick, `compare --format markdown` of two N-case
Results files (bench_compare.yardstick), is timed just before each run of the job, so both
sides of the ratio see the machine in the same state (run_all.py's records section).
The figures measured, and where the memory goes: bench/README.md, "The comment job at scale".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))

from bench_compare import _CLI, SRC, best_process, make_results, yardstick  # noqa: E402
from fakes.github import FakeGitHub  # noqa: E402
from helpers.action_harness import (  # noqa: E402
    Runner,
    fork_run_completed,
    main_with_baseline,
    zipped,
)

from agent_eval_action.compare.record import MainRecord  # noqa: E402
from agent_eval_action.compare.record_file import RECORD_NAME, encoded  # noqa: E402

WORKFLOW = ".github/workflows/agent-eval.yml"


def older_baselines(
    fake: FakeGitHub, cases: int, count: int, seed: int
) -> tuple[str | None, bytes | None]:
    """`count` older baselines, one on each of `count` push runs: each suite's own texts
    (another seed), so no run matches another's by chance. Returns the newest of their
    commits (main's history goes on from it) and main's record of them as the baseline's
    push run stores it (compare/record_file.py); (None, None) when there are none."""
    if not count:
        return None, None
    commits = fake.linear_history(count, prefix="older", branch=None)
    record = MainRecord()
    for index, sha in enumerate(reversed(commits)):  # nearest first
        run = fake.add_workflow_run(head_sha=sha, path=WORKFLOW, event="push")
        older = make_results(cases, 1, set(), seed + 100 + index)
        data = older.dump_json().encode()
        fake.add_artifact("agent-eval-results", zipped({"results.json": data}), run_id=run["id"])
        record.add(older)
        del older, data
    return commits[-1], encoded(record)


def measure(
    cases: int,
    repeat: int,
    seed: int = 8,
    profile: str | None = None,
    history: int = 0,
    walk: bool = False,
    versus: int = 0,
) -> dict:
    rng = random.Random(seed)
    changed = set(rng.sample(range(cases), cases // 50))
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        baseline_path, pr_path = tmp_path / "baseline.json", tmp_path / "pr.json"
        make_results(cases, 1, set(), seed).write(baseline_path)
        make_results(cases, 1, changed, seed + 1).write(pr_path)
        sizes = [p.stat().st_size / 1024 / 1024 for p in (baseline_path, pr_path)]
        fake = FakeGitHub().start()
        try:
            newest, record = older_baselines(fake, cases, history, seed)
            # the baseline's push run: its Results, and (unless --walk) main's record beside them
            files = {"results.json": baseline_path.read_bytes()}
            if record is not None and not walk:
                files[RECORD_NAME] = record
            del record
            main, head = main_with_baseline(fake, files)
            del files
            baseline_path.unlink()
            if newest is not None:  # main's history starts further back
                fake.commits[main[0]]["parents"] = [newest]
            fake.add_pull(7, head, main[3], head_repo="forker/demo")
            pr_run = fake.add_workflow_run(
                head_sha=head, event="pull_request", head_branch="feature", path=WORKFLOW,
                head_repository=fake.fork_repo(),
            )  # fmt: skip
            record = {"schema": "agent-eval-pr/1", "number": 7, "head_sha": head}
            files = {"results.json": pr_path.read_bytes(), "pr.json": json.dumps(record).encode()}
            pr_path.unlink()
            fake.add_artifact("agent-eval-results", zipped(files), run_id=pr_run["id"])
            del files
            payload = fork_run_completed(pr_run["id"], head)
            runner = Runner(fake, tmp_path)
            env = runner.env("workflow_run", payload, command="", mode="comment")
            argv = [sys.executable, "-c", _CLI, str(SRC), "action"]
            if profile:  # cProfile's figures of the action process, to FILE
                script = tmp_path / "cli.py"
                script.write_text(_CLI, encoding="utf-8")
                argv = [sys.executable, "-m", "cProfile", "-o", profile, str(script), str(SRC)]
                argv.append("action")
            if versus:  # the yardstick's files, in a folder of their own
                (tmp_path / "yardstick").mkdir()
                yardstick_argv = yardstick(tmp_path / "yardstick", versus)[0]
            best, yardstick_s = (float("inf"), 0.0), float("inf")
            for attempt in range(repeat):
                if versus:  # just before each run of the job: both in the same machine state
                    yardstick_s = min(yardstick_s, best_process(yardstick_argv, 1)[0])
                runner.out_dir = tmp_path / f"out{attempt}"
                env["INPUT_OUTPUT-DIR"] = str(runner.out_dir)
                started = time.perf_counter()
                done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - started
                if done.returncode not in (0, 1) or "VmHWM_kB" not in done.stderr:
                    raise SystemExit(f"the comment job exited {done.returncode}:\n{done.stderr}")
                peak = int(done.stderr.split("VmHWM_kB")[1].split()[0]) / 1024
                best = min(best, (wall, peak))
            comments = fake.comments_on(7)
            if len(comments) != 1 or "regress" not in comments[0]["body"].lower():
                raise SystemExit(f"expected one comment naming the regressions: {comments}")
            comment_chars = len(comments[0]["body"])
            # artifacts downloaded by the last run: the PR run's, the baseline, the older ones
            fetched = sum(r.route == "download_artifact" for r in fake.log) // repeat
        finally:
            fake.stop()
    return {
        "cases": cases,
        "file_mb": sizes,
        "comment_s": best[0],
        "comment_mb": best[1],
        "comment_chars": comment_chars,
        "exit": done.returncode,
        "repeat": repeat,
        "history": history,
        "walk": walk,
        "downloads": fetched,
        "versus": versus,
        "yardstick_s": yardstick_s if versus else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many processes")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the job to FILE")
    parser.add_argument(
        "--history", type=int, default=0, metavar="N",
        help="N older baselines on main's earlier push runs, as the action fetches them "
        "(its history input, 10 by default)",
    )  # fmt: skip
    parser.add_argument(
        "--walk", action="store_true",
        help="the baseline's artifact without main's record (as push runs before it stored "
        "one left them): the job downloads and folds each older baseline",
    )  # fmt: skip
    parser.add_argument(
        "--versus", type=int, default=0, metavar="N",
        help="also time issue 16's yardstick, `compare --format markdown` of two N-case "
        "Results files, just before each run of the job (best of --repeat, as the job)",
    )  # fmt: skip
    args = parser.parse_args()
    figures = measure(
        args.cases,
        args.repeat,
        profile=args.profile,
        history=args.history,
        walk=args.walk,
        versus=args.versus,
    )
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"mode comment, {figures['cases']:,} cases (Results files of "
        f"{' and '.join(f'{mb:.0f}' for mb in figures['file_mb'])} MB): the whole action "
        f"process {figures['comment_s']:.2f} s, peak RSS {figures['comment_mb']:.0f} MB, "
        f"exit {figures['exit']}, {figures['downloads']} artifacts downloaded "
        f"({figures['history']} older baselines"
        f"{', walked' if figures['walk'] else ''}), a comment of {figures['comment_chars']:,} "
        "characters "
        f"(best of {figures['repeat']})"
    )
    if figures["yardstick_s"] is not None:
        print(
            f"  the yardstick, `compare --format markdown` of {figures['versus']:,} cases, "
            f"run just before each: {figures['yardstick_s']:.2f} s; the job "
            f"{figures['comment_s'] / figures['yardstick_s']:.1f}x it"
        )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
