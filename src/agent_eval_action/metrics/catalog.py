"""The registry with every built-in metric in it: what questions about metrics go through.

registry.py only holds what is registered; importing this module registers the built-in
ones (builtin/, a module each, and ADK's efficiency metrics as not scored), so a module
that only needs a light part of metrics/ (efficiency.py, for `compare`) loads none of
them, nor the judge or the eval-file models they import.
"""

from __future__ import annotations

from . import builtin as _builtin  # noqa: F401  (its modules register the built-in metrics)
from .registry import find, metrics, names, not_scored, not_scored_entries

__all__ = ["find", "metrics", "names", "not_scored", "not_scored_entries"]
