"""The words every stage shares, declared once: axes, metric kinds, runner kinds, case keys,
run kinds.

This module sits at the bottom of the package (docs/architecture.md): it imports nothing
of ours, and everything may import it.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

# The two independent questions a case answers: did the agent act right (its tool-call
# trajectory), and did it answer right (its final response).
Axis = Literal["trajectory", "response"]
AXES: tuple[Axis, ...] = ("trajectory", "response")

# What a metric's score means for the gate: an axis it can regress on, or informational
# (recorded and shown, never an agent regression: efficiency counts, simulator quality).
MetricKind = Literal["trajectory", "response", "informational"]
METRIC_KINDS: tuple[MetricKind, ...] = ("trajectory", "response", "informational")

# How the agent under test is run (docs/runner-protocol.md, docs/cli.md).
RunnerKind = Literal["command", "adk", "adk_api", "adk_history"]
RUNNER_KINDS: tuple[RunnerKind, ...] = ("command", "adk", "adk_api", "adk_history")


# How --trajectory-policy overrides every trajectory criterion's match type: business =
# IN_ORDER, strict = EXACT, any_order = ANY_ORDER. ADK's own names are accepted too.
TrajectoryPolicy = Literal["business", "strict", "any_order"]
TRAJECTORY_POLICIES: tuple[TrajectoryPolicy, ...] = ("business", "strict", "any_order")
_ADK_MATCH_TYPES: dict[str, TrajectoryPolicy] = {
    "exact": "strict",
    "in_order": "business",
    "any_order": "any_order",
}


def parse_trajectory_policy(text: str) -> TrajectoryPolicy:
    """A policy by our name or ADK's match type (any case); ValueError naming the choices."""
    name = text.strip().lower()
    for policy in TRAJECTORY_POLICIES:
        if name == policy:
            return policy
    if name in _ADK_MATCH_TYPES:
        return _ADK_MATCH_TYPES[name]
    raise ValueError(
        f"must be business (IN_ORDER), strict (EXACT) or any_order (ANY_ORDER), got {text!r}"
    )


class CaseKey(NamedTuple):
    """A case's identity across runs and baselines: (eval_set_id, eval_id).

    A NamedTuple, so a key compares and hashes like the plain pair it replaces.
    """

    eval_set_id: str
    eval_id: str

    @property
    def name(self) -> str:
        """The case as every report and message names it: `set / id`."""
        return f"{self.eval_set_id} / {self.eval_id}"

    def __str__(self) -> str:
        return self.name


class RunKey(NamedTuple):
    """A case-run's identity: (eval_set_id, eval_id, run), the run 1-based; compares and
    hashes like the plain triple."""

    eval_set_id: str
    eval_id: str
    run: int

    @property
    def case(self) -> CaseKey:
        return CaseKey(self.eval_set_id, self.eval_id)

    def __str__(self) -> str:
        return f"{self.case.name} run {self.run}"


# Why a run of a case ran (`runs[].kind` in Results, docs/results.md): one of the suite's
# own runs; a regressed case run again before it is blamed (compare/confirm.py); every
# compared case once more for the suite-level test; main's own record of a case it had too
# few runs of; main's code on the merge-base, paired with a confirmation or a suite round
# of the pull request's (`runs[].paired_with`).
RunKind = Literal["suite", "confirmation", "suite_round", "sampling", "paired"]
RUN_KINDS: tuple[RunKind, ...] = ("suite", "confirmation", "suite_round", "sampling", "paired")


class Purpose(NamedTuple):
    """Why a run beyond the suite's own is planned, as a value: its kind, the kind of the
    pull request's run it pairs with (a paired run only), and, worded for people, what it
    re-runs to confirm (`runs[].confirms`; never read back to decide anything)."""

    kind: RunKind
    text: str
    paired_with: RunKind | None = None
