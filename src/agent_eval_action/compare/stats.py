"""The statistics behind noise-aware verdicts (explained in docs/statistics.md).

- `runs_worse_p`: per case, an exact one-sided permutation test on the runs'
  scores: how likely is a current mean this far below the baseline mean if the
  runs of both sides came from one and the same agent?
- `stratified_shift_p`: over cases and axes, did the current runs do worse than
  the baseline runs across the suite? The engine gives it one value per run and
  axis: the share of the axis's metrics that the run passed. Within each case,
  the runs of both sides are shuffled between the sides (under "nothing changed"
  any split is as likely); per axis the statistic is the Cochran-Mantel-Haenszel
  one: summed over cases, how far the current runs' total falls short of their
  share of the case's pooled total, standardised by its exact variance under
  shuffling. Each axis is judged against the largest standardised drop of any
  axis under the same shuffle (Westfall-Young max-T), so one alpha covers all
  axes however they are correlated. With many informative cases the shuffle
  distribution is replaced by its normal limit (same mean, variances and
  covariance: `max_t_p`), with few it is drawn.
- `benjamini_hochberg`: which of many per-case tests stay significant when the
  expected share of false alarms among them is held at `q`.

`drop_moments` and `max_t_p` take leading batch dimensions, so bench/gate_trust.py
computes thousands of simulated suites' tests at once with the engine's own code.

Random draws use a seed derived from the data, so a verdict is reproducible.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable, Sequence
from math import comb
from statistics import NormalDist

import numpy as np

from .statistics_policy import DEFAULT as STATISTICS

EPSILON = 1e-9
DRAWS = 10_000
EXACT_SPLITS = 20_000  # permutations of runs enumerated up to this many
NORMAL_LIMIT_CASES = 30  # informative cases from which the normal limit is used
# ... unless a side of some case has a single run: each such case's share is then lopsided
# (a run that fails where main's six passed moves it far; one that passes, a little), and the
# sum's tail is heavier than the normal one until the cases are many (checked in
# tests/test_suite_stats.py)
SKEWED_LIMIT_CASES = 1000
# Gauss-Legendre nodes for the joint tail of two standard normals (exact to ~1e-15 here).
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(32)


def _seed(values: Sequence[float]) -> int:
    digest = hashlib.sha256(repr([round(v, 12) for v in values]).encode()).digest()
    return int.from_bytes(digest[:8], "big")


Case = tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]


def stratified_shift_p(cases: Sequence[Case], axes: Sequence[str]) -> dict[str, float]:
    """Per axis, the one-sided p-value (adjusted over axes) that the current runs fell this
    far short of the baseline runs across cases by chance.

    Each case is (baseline runs x axes, current runs x axes) of per-run values (the engine
    gives pass shares); an axis a case lacks is a constant column (it then weighs nothing).
    A case with no run on a side, or whose runs are all alike, cannot move under shuffling
    and is left out.
    """
    groups: dict[tuple[int, int], list[Case]] = {}  # by (baseline runs, current runs)
    for case in cases:
        base, cur = case
        if len(base) and len(cur):
            groups.setdefault((len(base), len(cur)), []).append(case)
    drop = np.zeros(len(axes))
    covariance = np.zeros((len(axes), len(axes)))
    # the cases that can move, kept for shuffling only while there are few enough to need
    # it: past SKEWED_LIMIT_CASES the normal limit decides whatever their shape
    informative: list[tuple[int, np.ndarray]] = []
    moving, lopsided = 0, False
    for (n_base, n_current), members in groups.items():
        values = (v for base, cur in members for run in (*base, *cur) for v in run)
        count = len(members) * (n_base + n_current) * len(axes)
        pooled = np.fromiter(values, float, count).reshape(len(members), -1, len(axes))
        moments = drop_moments(pooled, n_base)
        drop += moments[0].sum(axis=0)
        covariance += moments[1].sum(axis=0)
        here = int(moments[2].sum())
        if not here:
            continue
        moving += here
        lopsided = lopsided or min(n_base, n_current) == 1
        if moving < SKEWED_LIMIT_CASES:
            informative.extend((n_base, runs) for runs in pooled[moments[2]])
        else:
            informative = []
    if not moving:
        return dict.fromkeys(axes, 1.0)
    if moving >= (SKEWED_LIMIT_CASES if lopsided else NORMAL_LIMIT_CASES):
        p_values = max_t_p(drop, covariance)
    else:
        p_values = _shuffle_p(informative, drop, covariance)
    return {axis: float(p) for axis, p in zip(axes, p_values, strict=True)}


def drop_moments(pooled: np.ndarray, n_base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each case's share of the stratified statistic and of its variance under shuffling.

    `pooled` is (..., runs, axes): a case's baseline runs (the first `n_base`), then its
    current runs. Returned, per case: the drop (..., axes), how far the current runs' total
    falls short of what shuffling gives them on average (their share of the pooled total;
    larger is worse); its covariance under shuffling (..., axes, axes), sampling without
    replacement; and whether any axis varies at all (...). A case that does not vary adds
    exactly nothing.
    """
    n_total = pooled.shape[-2]
    n_current = n_total - n_base
    mean = pooled.mean(axis=-2)
    centred = pooled - mean[..., None, :]
    spread = np.swapaxes(centred, -1, -2) @ centred
    informative = np.any(np.diagonal(spread, axis1=-2, axis2=-1) / n_total > EPSILON, axis=-1)
    drop = n_current * mean - pooled[..., n_base:, :].sum(axis=-2)
    covariance = spread * (n_base * n_current / (n_total * (n_total - 1)))
    drop = np.where(informative[..., None], drop, 0.0)
    covariance = np.where(informative[..., None, None], covariance, 0.0)
    return drop, covariance, informative


def max_t_p(drop: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Per axis, P(the largest standardised drop of any axis >= this axis's observed one)
    when the drops are normal with this covariance (one or two axes; leading dimensions are
    independent problems). An axis that cannot move gets 1.0 and takes no part."""
    scale = np.sqrt(np.clip(np.diagonal(covariance, axis1=-2, axis2=-1), 0.0, None))
    moved = scale > EPSILON
    z = np.where(moved, drop / np.where(moved, scale, 1.0), 0.0)
    tail = _upper_tail(z)
    if drop.shape[-1] == 2:
        both = np.all(moved, axis=-1)
        product = np.where(both, scale[..., 0] * scale[..., 1], 1.0)
        rho = np.clip(np.where(both, covariance[..., 0, 1] / product, 0.0), -1.0, 1.0)
        # Axes that move as one (identical columns) are exactly +-1, not a rounding short of
        # it: the tail is steep in rho there.
        rho = np.where(np.abs(rho) > 1 - 1e-12, np.sign(rho), rho)
        joint = _joint_upper_tail(z, rho[..., None])
        tail = np.where(both[..., None], 2 * tail - joint, tail)
    elif drop.shape[-1] != 1:
        raise ValueError("max-T is implemented for one or two axes")
    return np.where(moved, np.clip(tail, 0.0, 1.0), 1.0)


def _upper_tail(z: np.ndarray) -> np.ndarray:
    """P(Z >= z) for a standard normal Z, elementwise."""
    erfc = np.frompyfunc(math.erfc, 1, 1)
    return 0.5 * np.asarray(erfc(np.asarray(z, dtype=float) / math.sqrt(2)), dtype=float)


def _joint_upper_tail(z: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """P(Z1 >= z, Z2 >= z) for standard normals with correlation rho (Sheppard's formula:
    the tail at rho = 0 plus the integral of the density at (z, z) over the correlation,
    with rho = sin(theta); the integrand is smooth for every rho in [-1, 1])."""
    top = np.arcsin(rho)
    theta = (top[..., None] / 2) * (_NODES + 1)  # (..., axes, nodes)
    integrand = np.exp(-(z[..., None] ** 2) / (1 + np.sin(theta)))
    integral = (top / 2) * (integrand @ _WEIGHTS)
    return _upper_tail(z) ** 2 + integral / (2 * math.pi)


def _shuffle_p(
    informative: list[tuple[int, np.ndarray]], drop: np.ndarray, covariance: np.ndarray
) -> np.ndarray:
    """max-T p-values from draws: the runs of each case shuffled between the sides (cases of
    one shape drawn together; a single current run is a uniform pick of one of the runs)."""
    scale = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    moved = scale > EPSILON
    if not np.any(moved):
        return np.ones(len(scale))
    values = [float(n) for n, runs in informative for n in (n, *runs.ravel())]
    rng = np.random.default_rng(_seed(values))
    totals = np.zeros((DRAWS, len(scale)))
    shapes: dict[tuple[int, int], list[np.ndarray]] = {}
    for n_base, runs in informative:
        shapes.setdefault((n_base, len(runs)), []).append(runs)
    for (n_base, n_runs), members in shapes.items():
        group = np.stack(members)  # cases x runs x axes
        expected = (n_runs - n_base) * group.mean(axis=1).sum(axis=0)
        for start in range(0, DRAWS, _CHUNK):
            draws = min(_CHUNK, DRAWS - start)
            totals[start : start + draws] += expected - _current_sums(rng, group, n_base, draws)
    largest = (totals[:, moved] / scale[moved]).max(axis=1)
    observed = drop[moved] / scale[moved]
    p_values = np.ones(len(scale))
    p_values[moved] = (1 + np.sum(largest[:, None] >= observed - EPSILON, axis=0)) / (1 + DRAWS)
    return p_values


_CHUNK = 1000


def _current_sums(
    rng: np.random.Generator, group: np.ndarray, n_base: int, draws: int
) -> np.ndarray:
    """Per draw, the current runs' totals summed over the cases of one shape (draws x axes)."""
    cases, n_runs, _ = group.shape
    if n_runs - n_base == 1:
        picks = rng.integers(0, n_runs, size=(draws, cases))
        return group[np.arange(cases), picks].sum(axis=1)
    order = rng.random((draws, cases, n_runs)).argsort(axis=2)[:, :, n_base:]
    return np.take_along_axis(group[None], order[..., None], axis=2).sum(axis=(1, 2))


def drop_power(cases: Sequence[tuple[float, int, int]], drop: float, alpha: float) -> float:
    """About how often the stratified test at `alpha` fails the gate when every case loses
    `drop` of its pass rate (at most all of it). Each case is (pass rate, runs on main, runs
    here); the normal limit of the test's statistic, with its variance where the rates are
    after the drop."""
    expected = variance = 0.0
    for rate, n_main, n_here in cases:
        total = n_main + n_here
        if total < 2:
            continue
        lost = min(drop, rate)
        expected += n_main * n_here * lost / total
        pooled = rate - lost * n_here / total
        variance += pooled * (1 - pooled) * n_main * n_here / (total - 1)
    if variance <= EPSILON:
        return 0.0
    critical = NormalDist().inv_cdf(1 - alpha)
    return float(1 - _upper_tail(np.array(expected / math.sqrt(variance) - critical)))


def looks_power(
    cases: Sequence[tuple[float, int, int]],
    drop: float,
    alpha: float,
    rounds: int = 0,
    below: float = 0.0,
    round_alpha: float = 0.0,
) -> float:
    """`drop_power` for a test taken in looks (engine.py's suite rounds): significant at the
    first look (`alpha`), or hinting there (below `below`) and significant after `rounds`
    more runs of every case at `round_alpha`. An estimate: the later looks are taken as one
    (a round that stops early because the test already said so only helps), and the first
    look's outcome as independent of the last's (it is not: they share the first runs, which
    makes the estimate a little low)."""
    first = drop_power(cases, drop, alpha)
    if rounds < 1:
        return first
    hinted = drop_power(cases, drop, below)
    more = [(rate, n_main, n_here + rounds) for rate, n_main, n_here in cases]
    return first + max(0.0, hinted - first) * drop_power(more, drop, round_alpha)


def smallest_drop(power: Callable[[float], float]) -> float | None:
    """The smallest drop (in steps of 0.01) that `power(drop)` says is caught the policy's
    `detect_power` of the time, or None when not even losing every pass would be caught that
    often."""
    for step in range(1, 101):
        if power(step / 100) >= STATISTICS.detect_power:
            return step / 100
    return None


def runs_worse_p(baseline: Sequence[float], current: Sequence[float]) -> float:
    """One-sided p-value that the current runs' mean is this far below the baseline's by chance."""
    pooled = np.array([*baseline, *current], dtype=float)
    n_current = len(current)
    observed = float(np.mean(current) - np.mean(baseline))
    total = pooled.sum()

    def differences(current_sums: np.ndarray) -> np.ndarray:
        return current_sums / n_current - (total - current_sums) / len(baseline)

    if comb(len(pooled), n_current) <= EXACT_SPLITS:
        picks = np.array(list(itertools.combinations(range(len(pooled)), n_current)))
        diffs = differences(pooled[picks].sum(axis=1))
        return float(np.mean(diffs <= observed + EPSILON))
    rng = np.random.default_rng(_seed([*baseline, -1.0, *current]))
    picks = np.argsort(rng.random((DRAWS, len(pooled))), axis=1)[:, :n_current]
    diffs = differences(pooled[picks].sum(axis=1))
    return float((1 + np.sum(diffs <= observed + EPSILON)) / (1 + DRAWS))


def benjamini_hochberg(p_values: Sequence[float], q: float) -> list[bool]:
    """Which hypotheses are rejected at false-discovery rate q (step-up procedure)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    cutoff = 0
    for rank, index in enumerate(order, start=1):
        if p_values[index] <= q * rank / len(p_values):
            cutoff = rank
    rejected = set(order[:cutoff])
    return [i in rejected for i in range(len(p_values))]
