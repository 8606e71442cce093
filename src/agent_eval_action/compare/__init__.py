"""Baseline comparison: per case and metric diff, noise-aware verdicts, the gate, shard merge.

The application layer (pipeline/gate.py) wires these together for the CLI and the action.
"""

from __future__ import annotations

from .engine import compare
from .history import flaky_in_history
from .loading import load_baseline, load_results
from .model import Diff

__all__ = ["Diff", "compare", "flaky_in_history", "load_baseline", "load_results"]
