"""Metrics: each declared once, by its module in builtin/ (registry.py); importing this
package registers every built-in one. Criterion types are in criteria.py, the reading of
test_config.json in config.py, custom metrics in custom.py, the LLM judge in judge/."""

from . import builtin as _builtin  # noqa: F401  (registers the built-in metrics)
from .criteria import Criterion
from .registry import Metric, NotScored, RunScore, find, names, register

__all__ = ["Criterion", "Metric", "NotScored", "RunScore", "find", "names", "register"]
