"""Compare (and render) time and peak memory on a large suite: 10,000 cases x 3 metrics.

    python bench/bench_compare.py                  # 10,000 cases, 1 run of 1 turn per side
    python bench/bench_compare.py --runs 3 --turns 0   # 3 runs of 1 to 3 turns
    python bench/bench_compare.py --cases 2000 --profile
    python bench/bench_compare.py --files          # the CLI on the two Results as files

Two Results (baseline and current) are built in memory as records (as
bench/gate_trust.py does; building them is not what is timed), one
case in 50 changed. Timed: `compare(current, baseline)`, then the markdown reports of
the diff (the PR comment and the job summary of agent_eval_action.report.markdown) when
they exist. Peak RSS is this process's high-water mark (VmHWM on Linux, else
`resource.getrusage(RUSAGE_SELF).ru_maxrss`); run_all.py runs this file as a subprocess so
the figure is of compare alone (imports, both Results, the diff, the reports).

`--versus-json` is issue 16's measure: the whole `compare --format markdown` process on the
two files against a bare `python -c "json.load(a); json.load(b)"` process on the same
files, each the best of --repeat (5) runs back to back, wall time and peak RSS, absolute
seconds and their ratio. `--eval-file N` times loading an eval file of N cases (the
loader of `run`: pydantic input models, line-numbered errors) against a bare json.load.

`--files` measures what users run instead: both Results are written to JSON files, then
`agent-eval-action compare --baseline B --current C --format markdown --report /dev/null`
runs in a fresh process (loading both files, comparing, loading the current again for
the report, rendering it); its wall time and its own peak RSS (VmHWM, read by the
process itself as it exits: a child's ru_maxrss would include this parent's) are printed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


from agent_eval_action.results import (
    Actual,
    CaseResult,
    Content,
    Expected,
    FunctionCall,
    InvocationRecord,
    MetricResult,
    Part,
    Results,
    RunConfig,
    RunRecord,
    Source,
    Status,
    Timing,
    Usage,
    behaviour_fingerprint,
)

SRC = Path(__file__).resolve().parent.parent / "src"
NOW = datetime(2026, 11, 30, tzinfo=UTC)
METRICS = (
    ("tool_trajectory_avg_score", "trajectory", 1.0),
    ("response_match_score", "response", 0.8),
    ("final_response_match_v2", "response", 0.5),
)


def _content(text: str, role: str) -> Content:
    return Content(role=role, parts=[Part(text=text)])


def _run(run: int, index: int, ok: bool, turns: int) -> RunRecord:
    invocations = []
    for turn in range(turns):
        call = FunctionCall(
            name="lookup" if ok else "guess", args={"id": f"A-{index}", "turn": turn}
        )
        invocations.append(
            InvocationRecord(
                user_content=_content(f"question {index}.{turn}", "user"),
                expected=Expected(
                    final_response=_content(f"answer {index}.{turn}", "model"),
                    tool_uses=[FunctionCall(name="lookup", args=call.args)],
                ),
                actual=Actual(
                    final_response=_content(
                        f"answer {index}.{turn}" if ok else f"maybe {index}", "model"
                    ),
                    tool_uses=[call],
                    tool_responses=[],
                ),
                duration_s=0.5,
            )
        )
    return RunRecord(
        run=run,
        invocations=invocations,
        error=None,
        duration_s=1.0,
        fingerprint=behaviour_fingerprint(invocations),  # as the score stage records it
    )


def make_results(
    cases: int, runs: int, changed: set[int], seed: int, turns: int | None = 1
) -> Results:
    """A Results of `cases` cases x 3 metrics x `runs` runs of `turns` turns (None: 1 to 3,
    case by case); cases in `changed` regress. Every case has its own texts and calls."""
    rng = random.Random(seed)
    results = []
    for index in range(cases):
        ok = index not in changed
        case_turns = turns or 1 + index % 3
        noisy = index % 10 == 0  # a tenth of the cases: runs disagree on the response
        metrics = {}
        for name, axis, threshold in METRICS:
            per_run = [
                (1.0 if ok else 0.0)
                if axis == "trajectory"
                else (0.9 if ok else 0.4) - (rng.random() * 0.2 if noisy else 0.0)
                for _ in range(runs)
            ]
            score = sum(per_run) / runs
            metrics[name] = MetricResult(
                axis=axis,
                score=score,
                threshold=threshold,
                status=Status.PASSED if score >= threshold else Status.FAILED,
                runs=tuple(per_run),
                invocations=tuple((s,) * case_turns for s in per_run),
                judge=None,
                error=None,
            )
        failed = any(m.status == Status.FAILED for m in metrics.values())
        results.append(
            CaseResult(
                eval_set_id=f"set{index % 20}",
                eval_id=f"case_{index:05d}",
                file=f"evals/set{index % 20}.evalset.json",
                line=index + 1,
                case_sha256="x",
                status=Status.FAILED if failed else Status.PASSED,
                note=None,
                metrics=metrics,
                runs=[_run(r, index, ok, case_turns) for r in range(1, runs + 1)],
                usage=Usage(),
                duration_s=float(runs),
            )
        )
    return Results(
        schema_="agent-eval-results/1",
        created_at=NOW,
        tool_version="bench",
        adk_version=None,
        partial=False,
        source=Source(sha="bench"),
        run_config=RunConfig(runner="command", num_runs=runs),
        shard=None,
        eval_sets=[],
        cases=results,
        usage=Usage(),
        timing=Timing(started_at=NOW, finished_at=NOW, duration_s=0.0),
        warnings=[],
    )


def markdown_renderers() -> dict:
    """The report package's markdown renderers of a Diff (the PR comment and the job
    summary, called as fn(diff, current)), when they exist; empty otherwise."""
    try:
        module = importlib.import_module("agent_eval_action.report.markdown")
    except ImportError:
        return {}
    return {
        name: getattr(module, name)
        for name in ("comment", "summary")
        if callable(getattr(module, name, None))
    }


def peak_rss_kb() -> int:
    """This process's peak resident set size in KiB: VmHWM where Linux has it (ru_maxrss
    there keeps the parent's peak across fork and exec), else getrusage's ru_maxrss."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def measure(cases: int, runs: int, seed: int, turns: int | None = 1, profile: bool = False) -> dict:
    from agent_eval_action.compare import compare

    rng = random.Random(seed)
    changed = set(rng.sample(range(cases), cases // 50))
    before_kb = peak_rss_kb()
    baseline = make_results(cases, runs, set(), seed, turns)
    current = make_results(cases, runs, changed, seed + 1, turns)
    inputs_kb = peak_rss_kb() - before_kb
    if profile:
        import cProfile
        import pstats

        with cProfile.Profile() as profiler:
            compare(current, baseline)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    started = time.perf_counter()
    diff = compare(current, baseline)
    compare_s = time.perf_counter() - started
    render_s = None
    renderers = markdown_renderers()
    if renderers:
        started = time.perf_counter()
        for render in renderers.values():
            render(diff, current)
        render_s = time.perf_counter() - started
    peak_kb = peak_rss_kb()
    return {
        "cases": cases,
        "metrics": len(METRICS),
        "runs": runs,
        "turns": turns or "1-3",
        "compare_s": compare_s,
        "render_s": render_s,
        "rendered": sorted(renderers),
        "peak_rss_mb": peak_kb / 1024,
        "inputs_mb": inputs_kb / 1024,
        "regressions": diff.verdict.trajectory_regressions + diff.verdict.response_regressions,
        "changed": len(changed),
    }


# Runs the CLI in this process, then reports the process's own peak RSS on stderr.
_CLI = """
import sys
from pathlib import Path

sys.path.insert(0, sys.argv.pop(1))
from agent_eval_action.cli import main

try:
    code = main(sys.argv[1:])
finally:
    status = Path("/proc/self/status").read_text()
    print("VmHWM_kB", status.split("VmHWM:")[1].split()[0], file=sys.stderr)
raise SystemExit(code)
"""


def measure_files(cases: int, runs: int, seed: int, turns: int | None = 1) -> dict:
    """`agent-eval-action compare --format markdown` on the two Results written as files."""
    rng = random.Random(seed)
    changed = set(rng.sample(range(cases), cases // 50))
    with tempfile.TemporaryDirectory() as tmp:
        baseline_path, current_path = Path(tmp, "baseline.json"), Path(tmp, "current.json")
        make_results(cases, runs, set(), seed, turns).write(baseline_path)
        make_results(cases, runs, changed, seed + 1, turns).write(current_path)
        sizes = [p.stat().st_size for p in (baseline_path, current_path)]
        argv = [
            *("compare", "--baseline", str(baseline_path), "--current", str(current_path)),
            *("--format", "markdown", "--report", os.devnull),
        ]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _CLI, str(SRC), *argv], capture_output=True, text=True
        )
        wall_s = time.perf_counter() - started
    if done.returncode not in (0, 1) or "VmHWM_kB" not in done.stderr:
        raise SystemExit(f"compare exited {done.returncode}:\n{done.stderr}")
    peak_kb = int(done.stderr.split("VmHWM_kB")[1].split()[0])
    return {
        "cases": cases,
        "metrics": len(METRICS),
        "runs": runs,
        "turns": turns or "1-3",
        "cli_s": wall_s,
        "peak_rss_mb": peak_kb / 1024,
        "file_mb": [size / 1024 / 1024 for size in sizes],
        "exit": done.returncode,
    }


# A bare process reading the two files as JSON (the yardstick), reporting its peak RSS.
_JSON = """
import json, sys
from pathlib import Path

for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as f:
        json.load(f)
status = Path("/proc/self/status").read_text()
print("VmHWM_kB", status.split("VmHWM:")[1].split()[0], file=sys.stderr)
"""

# Loads one eval file as `run` does (evalset/loader.py), reporting its peak RSS.
_EVAL = """
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from agent_eval_action.evalset.discovery import EvalTarget
from agent_eval_action.evalset.loader import load_eval_file

path = Path(sys.argv[2])
loaded = load_eval_file(EvalTarget(path, path.parent), [])
assert len(loaded.cases) == int(sys.argv[3])
status = Path("/proc/self/status").read_text()
print("VmHWM_kB", status.split("VmHWM:")[1].split()[0], file=sys.stderr)
"""


def best_process(argv: list[str], repeat: int) -> tuple[float, float]:
    """The best wall time of `repeat` runs of a process, and its peak RSS in MB (VmHWM, which
    the process prints on stderr); runs back to back."""
    wall, peak, _ = best_process_cpu(argv, repeat)
    return wall, peak


def best_process_cpu(argv: list[str], repeat: int) -> tuple[float, float, float]:
    """best_process, and the least CPU time (user + system) of those runs: on a shared
    machine a long process's wall time carries the other load, its CPU time less so."""
    best, cpu = (float("inf"), 0.0), float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1) or "VmHWM_kB" not in done.stderr:
            raise SystemExit(f"{argv[:3]} exited {done.returncode}:\n{done.stderr[-2000:]}")
        peak = int(done.stderr.split("VmHWM_kB")[1].split()[0]) / 1024
        best = min(best, (wall, peak))
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        cpu = min(cpu, used)
    return best[0], best[1], cpu


def yardstick(
    folder: Path, cases: int, runs: int = 1, seed: int = 8, turns: int | None = 1
) -> tuple[list[str], Path, Path]:
    """Issue 16's yardstick, set up in `folder`: two Results files (baseline and current, one
    case in 50 regressed) and the argv of the `compare --format markdown` process on them."""
    rng = random.Random(seed)
    changed = set(rng.sample(range(cases), cases // 50))
    base, cur = folder / "baseline.json", folder / "current.json"
    make_results(cases, runs, set(), seed, turns).write(base)
    make_results(cases, runs, changed, seed + 1, turns).write(cur)
    argv = [
        *(sys.executable, "-c", _CLI, str(SRC), "compare"),
        *("--baseline", str(base), "--current", str(cur)),
        *("--format", "markdown", "--report", os.devnull),
    ]
    return argv, base, cur


def versus_json(cases: int, runs: int, seed: int, turns: int | None, repeat: int) -> dict:
    """`compare --format markdown` on two Results files against a bare json.load of both."""
    with tempfile.TemporaryDirectory() as tmp:
        argv, base, cur = yardstick(Path(tmp), cases, runs, seed, turns)
        sizes = [p.stat().st_size / 1024 / 1024 for p in (base, cur)]
        json_s, json_mb = best_process([sys.executable, "-c", _JSON, str(base), str(cur)], repeat)
        compare_s, compare_mb = best_process(argv, repeat)
    return {
        "cases": cases,
        "runs": runs,
        "turns": turns or "1-3",
        "file_mb": sizes,
        "json_s": json_s,
        "json_mb": json_mb,
        "compare_s": compare_s,
        "compare_mb": compare_mb,
        "ratio": compare_s / json_s,
        "repeat": repeat,
    }


def write_eval_file(path: Path, cases: int) -> None:
    """An eval set of `cases` one-turn cases, each expecting an answer and one tool call,
    written compactly (300,000 of them stay under the 64 MiB cap on eval files)."""
    eval_cases = [
        {
            "eval_id": f"c{i}",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": f"q {i}"}]},
                    "final_response": {"parts": [{"text": f"a {i}"}]},
                    "intermediate_data": {"tool_uses": [{"name": "f", "args": {"i": i}}]},
                }
            ],
        }
        for i in range(cases)
    ]
    data = {"eval_set_id": "bench", "eval_cases": eval_cases}
    path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")


def eval_file(cases: int, repeat: int) -> dict:
    """Loading an eval file of `cases` cases as `run` does, against a bare json.load of it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "bench.evalset.json")
        write_eval_file(path, cases)
        size = path.stat().st_size / 1024 / 1024
        json_s, json_mb, json_cpu = best_process_cpu(
            [sys.executable, "-c", _JSON, str(path)], repeat
        )
        load_s, load_mb, load_cpu = best_process_cpu(
            [sys.executable, "-c", _EVAL, str(SRC), str(path), str(cases)], repeat
        )
    return {
        "cases": cases,
        "file_mb": size,
        "json_s": json_s,
        "json_mb": json_mb,
        "json_cpu_s": json_cpu,
        "load_s": load_s,
        "load_mb": load_mb,
        "load_cpu_s": load_cpu,
        "ratio": load_s / json_s,
        "cpu_ratio": load_cpu / json_cpu,
        "repeat": repeat,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1, help="runs per case and side (default 1)")
    parser.add_argument(
        "--turns", type=int, default=1, help="turns per case (default 1; 0: 1 to 3, case by case)"
    )
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of compare")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--files", action="store_true", help="measure the CLI on the two Results written as files"
    )
    parser.add_argument(
        "--versus-json",
        action="store_true",
        help="the whole compare process against a bare json.load of the two files (issue 16)",
    )
    parser.add_argument(
        "--eval-file", type=int, metavar="N", help="loading an eval file of N cases vs json.load"
    )
    parser.add_argument("--repeat", type=int, default=5, help="best of this many processes")
    args = parser.parse_args()
    if args.eval_file:
        figures = eval_file(args.eval_file, args.repeat)
        if args.json:
            print(json.dumps(figures))
            return
        print(
            f"eval file of {figures['cases']:,} cases ({figures['file_mb']:.0f} MB): loaded in "
            f"{figures['load_s']:.2f} s, peak RSS {figures['load_mb']:.0f} MB; bare json.load "
            f"{figures['json_s']:.2f} s, {figures['json_mb']:.0f} MB: {figures['ratio']:.1f}x "
            f"(best of {figures['repeat']}); CPU time {figures['load_cpu_s']:.2f} s vs "
            f"{figures['json_cpu_s']:.2f} s: {figures['cpu_ratio']:.1f}x"
        )
        return
    if args.versus_json:
        figures = versus_json(args.cases, args.runs, args.seed, args.turns or None, args.repeat)
        if args.json:
            print(json.dumps(figures))
            return
        print(
            f"{figures['cases']:,} cases, {figures['runs']} run(s) of {figures['turns']} "
            f"turn(s), files of {' and '.join(f'{mb:.0f}' for mb in figures['file_mb'])} MB: "
            f"`compare --format markdown` {figures['compare_s']:.2f} s, peak RSS "
            f"{figures['compare_mb']:.0f} MB; bare json.load of both {figures['json_s']:.2f} s, "
            f"{figures['json_mb']:.0f} MB: {figures['ratio']:.2f}x (best of {figures['repeat']})"
        )
        return
    if args.files:
        figures = measure_files(args.cases, args.runs, args.seed, args.turns or None)
        if args.json:
            print(json.dumps(figures))
            return
        print(
            f"{figures['cases']:,} cases x {figures['metrics']} metrics, {figures['runs']} "
            f"run(s) of {figures['turns']} turn(s), files of "
            f"{' and '.join(f'{mb:.0f}' for mb in figures['file_mb'])} MB: `compare --format "
            f"markdown` {figures['cli_s']:.2f} s (the whole process), "
            f"peak RSS {figures['peak_rss_mb']:.0f} MB (exit {figures['exit']})"
        )
        return
    figures = measure(args.cases, args.runs, args.seed, args.turns or None, args.profile)
    if args.json:
        print(json.dumps(figures))
        return
    render = (
        "n/a"
        if figures["render_s"] is None
        else f"{figures['render_s']:.2f} s ({' + '.join(figures['rendered'])})"
    )
    print(
        f"{figures['cases']:,} cases x {figures['metrics']} metrics, {figures['runs']} run(s) "
        f"of {figures['turns']} turn(s): "
        f"compare {figures['compare_s']:.2f} s, render {render}, "
        f"peak RSS {figures['peak_rss_mb']:.0f} MB, of which the two Results "
        f"{figures['inputs_mb']:.0f} MB "
        f"({figures['regressions']} regressions found, {figures['changed']} cases changed)"
    )


if __name__ == "__main__":
    main()
