"""Baseline comparison: per case and metric diff, noise-aware verdicts, the gate, shard merge.

The application layer (pipeline/gate.py) wires these together for the CLI and the action.
"""

from __future__ import annotations

from .engine import compare
from .loading import load_baseline, load_results
from .model import Diff
from .record import MainRecord

__all__ = ["Diff", "MainRecord", "compare", "load_baseline", "load_results"]
