"""Scores within their metric's range: the check compare/sanity.py cannot make alone.

Every built-in metric (the registry's `find`) scores a case within [0, 1], as ADK's do,
but response_evaluation_score (ADK's coherence scale, 1 to 5: not checked here).
Custom metrics (test_config.json `custom_metrics`, whose names may not be ADK's) and
counts are not bounded. compare/ may not import metrics/ (the import layers), so the
loading there checks what any Results must be, and this layer, which may import both,
adds the ranges.
"""

from __future__ import annotations

from ..compare.sanity import ResultsRefused, check_bounded
from ..results import Results

__all__ = ["ResultsRefused", "bounded_metric", "check_scores"]


def bounded_metric(name: str) -> bool:
    """Whether the metric of this name is declared to score within [0, 1]."""
    from ..metrics import find

    metric = find(name)
    return metric is not None and metric.score_range == (0.0, 1.0)


def check_scores(results: Results, display: str) -> None:
    """Raise ResultsRefused (an InputError: one line naming `display`) when a built-in
    metric's score is outside [0, 1]."""
    check_bounded(results, display, bounded_metric)
