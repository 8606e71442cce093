"""The statistics behind noise-aware verdicts (explained in docs/statistics.md).

- `runs_worse_p`: per case, an exact one-sided permutation test on the runs'
  scores: how likely is a current mean this far below the baseline mean if the
  runs of both sides came from one and the same agent?
- `stratified_shift_p`: over cases and axes, did the current runs score lower
  than the baseline runs across the suite? Within each case, the runs of both
  sides are shuffled between the sides (under "nothing changed" any split is as
  likely); each axis is judged against the largest standardised drop of any
  axis under the same shuffle (Westfall-Young max-T), so one alpha covers all
  axes however they are correlated. With many informative cases the shuffle
  distribution is replaced by its normal limit (same mean, variances and
  covariances), which is exact enough there and fast.
- `benjamini_hochberg`: which of many per-case tests stay significant when the
  expected share of false alarms among them is held at `q`.

Random draws use a seed derived from the data, so a verdict is reproducible.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from math import comb

import numpy as np

EPSILON = 1e-9
DRAWS = 10_000
EXACT_SPLITS = 20_000  # permutations of runs enumerated up to this many


def _seed(values: Sequence[float]) -> int:
    digest = hashlib.sha256(repr([round(v, 12) for v in values]).encode()).digest()
    return int.from_bytes(digest[:8], "big")


NORMAL_LIMIT_CASES = 30  # informative cases from which the normal limit is used


def stratified_shift_p(
    cases: Sequence[tuple[np.ndarray, np.ndarray]], axes: Sequence[str]
) -> dict[str, float]:
    """Per axis, the one-sided p-value (adjusted over axes) that current runs scored this much
    lower than baseline runs across cases by chance.

    Each case is (baseline runs x axes, current runs x axes) of run scores; an axis a case
    lacks is a constant column (it then weighs nothing).
    """
    informative = []
    for base, cur in cases:
        pooled = np.vstack([base, cur])
        variance = pooled.var(axis=0)
        if np.all(variance <= EPSILON):
            continue  # every run scored the same: no shuffle changes anything
        informative.append((base, cur, pooled, variance))
    if not informative:
        return dict.fromkeys(axes, 1.0)
    # The observed drop, summed over cases, and its variance and covariances under shuffling.
    observed = np.zeros(len(axes))
    covariance = np.zeros((len(axes), len(axes)))
    for base, cur, pooled, _ in informative:
        observed -= cur.mean(axis=0) - base.mean(axis=0)  # larger = worse
        factor = len(pooled) / (len(pooled) - 1) * (1 / len(base) + 1 / len(cur))
        centred = pooled - pooled.mean(axis=0)
        covariance += factor * (centred.T @ centred) / len(pooled)
    scale = np.sqrt(np.diag(covariance))
    moved = scale > EPSILON
    if not np.any(moved):
        return dict.fromkeys(axes, 1.0)
    z = observed[moved] / scale[moved]
    if len(informative) >= NORMAL_LIMIT_CASES:
        correlation = covariance[np.ix_(moved, moved)] / np.outer(scale[moved], scale[moved])
        tails = [_normal_max_tail(value, correlation) for value in z]
    else:
        largest = _shuffle_maxima(informative, scale, moved)
        tails = [float((1 + np.sum(largest >= value - EPSILON)) / (1 + DRAWS)) for value in z]
    p_values = dict.fromkeys(axes, 1.0)
    for axis, tail in zip([a for a, m in zip(axes, moved, strict=True) if m], tails, strict=True):
        p_values[axis] = tail
    return p_values


def _normal_tail(x: np.ndarray | float) -> np.ndarray:
    return 0.5 * np.vectorize(math.erfc)(np.asarray(x) / math.sqrt(2))


def _normal_max_tail(z: float, correlation: np.ndarray) -> float:
    """P(the largest of one or two standard normals with this correlation is >= z)."""
    if len(correlation) == 1:
        return float(_normal_tail(z))
    rho = float(np.clip(correlation[0, 1], -1.0, 1.0))
    # P(Z1 >= z or Z2 >= z) = 2 P(Z1 >= z) - P(Z1 >= z, Z2 >= z); the joint tail by quadrature.
    x = np.linspace(z, z + 12.0, 4001)
    density = np.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)
    spread = math.sqrt(max(1.0 - rho**2, 0.0))
    both = (
        _normal_tail((z - rho * x) / spread)
        if spread > 1e-6
        else (rho * x >= z - EPSILON).astype(float)
    )
    joint = float(np.trapezoid(density * both, x))
    return min(1.0, 2 * float(_normal_tail(z)) - joint)


def _shuffle_maxima(informative: list, scale: np.ndarray, moved: np.ndarray) -> np.ndarray:
    """Draws of the largest standardised drop over axes, shuffling runs within each case."""
    rng = np.random.default_rng(
        _seed([float(x) for _, _, pooled, _ in informative for x in pooled.ravel()])
    )
    totals = np.zeros((DRAWS, len(scale)))
    for base, _, pooled, _ in informative:
        order = rng.random((DRAWS, len(pooled))).argsort(axis=1)
        shuffled = pooled[order]  # draws x runs x axes
        totals -= shuffled[:, len(base) :].mean(axis=1) - shuffled[:, : len(base)].mean(axis=1)
    return (totals[:, moved] / scale[moved]).max(axis=1)


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
