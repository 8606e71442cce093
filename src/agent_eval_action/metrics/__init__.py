"""Metrics: each declared once, by its module in builtin/ (registry.py); importing this
package registers every built-in one. Criterion types are in criteria.py, the reading of
test_config.json in config.py, custom metrics in custom.py, the LLM judge in judge/, ADK's informational efficiency
metrics (computed for every case, never in criteria) in efficiency.py."""

from . import builtin as _builtin  # noqa: F401  (registers the built-in metrics)
from . import efficiency as _efficiency  # noqa: F401  (declares ADK's efficiency metrics)
from .criteria import Criterion
from .registry import Metric, NotScored, RunScore, find, names, register

__all__ = ["Criterion", "Metric", "NotScored", "RunScore", "find", "names", "register"]
