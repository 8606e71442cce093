"""The pytest route ADK users already have, through this tool's pipeline.

ADK's docs have CI users write, in pytest,

    await AgentEvaluator.evaluate("my_agent", "tests/evals", num_runs=2)

which fails with a wall of `FunctionCall(...)` reprs. The one-line migration is the import:

    from agent_eval_action.testing import AgentEvaluator

Same arguments, same discovery of the agent (the package ADK imports as `agent_module`)
and of `test_config.json`; the run is `agent-eval-action run PATH --agent DIR` (the
in-process ADK Runner, our scoring, our gate), and a failure is an AssertionError holding
the per-case, per-axis table. `results_file=` writes the Results with the same runner and
target as `--agent DIR`, so a pytest job on main can record the baseline too.
`AgentEvaluator.evaluate` is a coroutine, for async tests (pytest-asyncio, anyio);
`AgentEvaluator.evaluate_sync` is the same for plain test functions.

A failure reads as the test's own: the AssertionError (and a bad input's InputError) is
raised from frames of this module that pytest hides (`__tracebackhide__`), with no frame
below them, so the test's author sees the message, not this library's source. The message
is the console's (report/console.py): the table, then per failing case its first
divergent turn, the expected tool call against the one made with the differing argument
marked (report/why.py).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

from .errors import EXIT_INFRASTRUCTURE, EXIT_PASS, InputError
from .pipeline.options import DEFAULTS, RunOptions
from .results import Results

NUM_RUNS = 2  # ADK's AgentEvaluator.evaluate default
CONFIRM_RUNS = DEFAULTS.run.confirm_runs  # as `run` confirms a regression


class EvaluationFailed(AssertionError):
    """The agent did not pass: its message is the per-case, per-axis table and why each
    failing case fails; `results` holds the Results."""

    def __init__(self, message: str, results: Results) -> None:
        super().__init__(message)
        self.results = results


def agent_directory(agent_module: str) -> Path:
    """The package directory of ADK's `agent_module` ("my_agent", or "my_agent.agent"),
    found as ADK imports it (from sys.path); InputError when there is none."""
    name = agent_module.removesuffix(".agent") if agent_module.endswith(".agent") else agent_module
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as err:
        raise InputError(f"agent_module {agent_module!r}: cannot be found: {err}") from None
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"agent_module {agent_module!r}: no such package on sys.path (an ADK agent is a "
            "package whose __init__.py imports its agent module)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _target(directory: Path) -> str:
    """The directory as `--agent DIR` records it when run from the working directory."""
    try:
        return directory.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return directory.as_posix()


class AgentEvaluator:
    """A drop-in for `google.adk.evaluation.AgentEvaluator.evaluate`."""

    @staticmethod
    async def evaluate(
        agent_module: str,
        eval_dataset_file_path_or_dir: str,
        num_runs: int = NUM_RUNS,
        agent_name: str | None = None,
        initial_session_file: str | None = None,
        print_detailed_results: bool = True,
        *,
        results_file: str | os.PathLike[str] | None = None,
        baseline: str | os.PathLike[str] | None = None,
        config: str | None = None,
        fail_on: str = "regression",
        budgets: Sequence[tuple[str, float]] = (),
        strip_thoughts: bool = False,
        confirm_runs: int = CONFIRM_RUNS,
    ) -> Results:
        """Evaluate as ADK's `AgentEvaluator.evaluate` does, for async tests (the run goes
        to a worker thread with its own event loop). See `evaluate_sync`."""
        __tracebackhide__ = True
        try:
            return await asyncio.to_thread(
                AgentEvaluator.evaluate_sync,
                agent_module,
                eval_dataset_file_path_or_dir,
                num_runs,
                agent_name,
                initial_session_file,
                print_detailed_results,
                results_file=results_file,
                baseline=baseline,
                config=config,
                fail_on=fail_on,
                budgets=budgets,
                strip_thoughts=strip_thoughts,
                confirm_runs=confirm_runs,
            )
        except (EvaluationFailed, InputError) as failure:
            raise _here(failure) from None  # not from the worker thread, through asyncio

    @staticmethod
    def evaluate_sync(
        agent_module: str,
        eval_dataset_file_path_or_dir: str,
        num_runs: int = NUM_RUNS,
        agent_name: str | None = None,
        initial_session_file: str | None = None,
        print_detailed_results: bool = True,
        *,
        results_file: str | os.PathLike[str] | None = None,
        baseline: str | os.PathLike[str] | None = None,
        config: str | None = None,
        fail_on: str = "regression",
        budgets: Sequence[tuple[str, float]] = (),
        strip_thoughts: bool = False,
        confirm_runs: int = CONFIRM_RUNS,
    ) -> Results:
        """Run the eval files at the path (a file, `FILE:id1,id2`, or a folder: every
        *.evalset.json and *.test.json below it) against the agent package ADK would import
        as `agent_module`, score them, and gate: on thresholds (ADK's rule), or on
        regressions against `baseline` (a Results file), as `run --baseline` does: a
        regression is re-run up to `confirm_runs` times before it is blamed, as `run` confirms
        it (0: blamed on its first run), so a noisy agent makes more model calls there.

        Raises EvaluationFailed (an AssertionError) with the table when the gate fails,
        InputError (one line naming the file) on bad input, RuntimeError when no verdict
        could be reached (cancelled, or the judge's Gemini out of reach). Returns the Results,
        also written to `results_file` when given. Unlike ADK: `agent_name` (a sub-agent)
        is not supported; `num_runs` defaults to ADK's 2."""
        __tracebackhide__ = True
        _no_running_loop()
        if agent_name is not None:
            raise InputError(
                "agent_name: evaluating a sub-agent alone is not supported; evaluate the root "
                "agent of the package"
            )
        if num_runs < 1:
            raise InputError(f"num_runs must be at least 1, got {num_runs}")

        if confirm_runs < 0:
            raise InputError(f"confirm_runs must be 0 or more, got {confirm_runs}")
        options = RunOptions(
            num_runs=num_runs,
            confirm_runs=confirm_runs,
            config=config,
            initial_session=initial_session_file,
            strip_thoughts=strip_thoughts,
            budgets=tuple(budgets),
        )
        try:
            results, verdict, table = _run(
                _target(agent_directory(agent_module)),
                str(eval_dataset_file_path_or_dir),
                options,
                baseline=None if baseline is None else str(baseline),
                fail_on=fail_on,
            )
        except InputError as bad:
            raise _here(bad) from None  # one line naming the file: no frame of ours below
        if results_file is not None:
            results.write(Path(results_file))
        if verdict == EXIT_INFRASTRUCTURE:
            raise RuntimeError(
                "no verdict: the run was cancelled, or Gemini could not be reached for judged "
                "metrics (after retries)\n\n" + table
            )
        if verdict != EXIT_PASS:
            raise EvaluationFailed(
                f"the agent {agent_module} did not pass its evals "
                f"({eval_dataset_file_path_or_dir}):\n\n{table}",
                results,
            )
        if print_detailed_results:
            print(table)
        return results


def _here(error: Exception) -> Exception:
    """The error without the frames it was raised through: raised again, its traceback
    starts at the (hidden) frame that raises it."""
    return error.with_traceback(None)


def _no_running_loop() -> None:
    __tracebackhide__ = True
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "AgentEvaluator.evaluate_sync() was called inside a running event loop; in an async "
        "test, use `await AgentEvaluator.evaluate(...)`"
    )


def _run(
    target: str, path: str, options: RunOptions, *, baseline: str | None, fail_on: str
) -> tuple[Results, int, str]:
    """The `run --agent DIR` pipeline: the job, the agent stage, the score stage, the
    confirmation rounds against a baseline, the gate. (Results, exit code as `run` gives
    it, the table to show)."""
    from .github.env import GitHubEnv
    from .pipeline import gate as gating
    from .pipeline.job import prepare
    from .pipeline.run_cases import run_cases
    from .pipeline.session import Session
    from .report.console import table
    from .report.diff_console import table as diff_table
    from .runners import adk_runner

    gate = gating.gate_options(fail_on, ())
    runner = adk_runner(
        target, concurrency=options.concurrency, timeout=options.timeout_s, flag="agent_module"
    )
    job = prepare([path], options, baseline=baseline)
    session = Session(job, gate, GitHubEnv.from_env(os.environ).source(), runner=runner)
    scored = session.start(run_cases(job.plan, runner, simulator=job.judge))  # scenarios too
    if baseline is not None:
        scored, _ = session.confirm()  # as `run --baseline` confirms a regression
    results = scored.results
    if results.partial:
        return results, EXIT_INFRASTRUCTURE, table(results)
    if baseline is None:
        code, shown = gating.threshold_code(results), table(results)
    else:
        diff = gating.gate(results, job.baseline, gate)
        code, shown = gating.verdict_code(diff), diff_table(diff)
    return results, gating.judged_code(results, scored.judged, code), shown
