"""Metric registry; importing this package registers the built-in metrics."""

from . import builtin as _builtin  # noqa: F401  (registers the built-ins)
from .registry import AXES, Axis, Metric, RunScore, builtin, builtin_names

__all__ = ["AXES", "Axis", "Metric", "RunScore", "builtin", "builtin_names"]
