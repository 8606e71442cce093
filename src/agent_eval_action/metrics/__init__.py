"""Metrics: each declared once, by its module in builtin/ (registry.py); catalog.py is the
registry with every built-in one in it, imported on first use of `find` or `names` here (so
importing a light module of this package, e.g. efficiency.py for `compare`, loads no
metric, judge or eval-file model). Criterion types are in criteria.py, the reading of
test_config.json in config.py, custom metrics in custom.py, the LLM judge in judge/, ADK's
informational efficiency metrics (computed for every case, never in criteria) in
efficiency.py."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .catalog import find, names
    from .criteria import Criterion
    from .registry import Metric, NotScored, RunScore, register

__all__ = ["Criterion", "Metric", "NotScored", "RunScore", "find", "names", "register"]
_HOME = {"Criterion": ".criteria", "find": ".catalog", "names": ".catalog"}  # else: .registry


def __getattr__(name: str) -> Any:
    """The package's names, imported from their modules on first use."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOME.get(name, ".registry"), __name__), name)
