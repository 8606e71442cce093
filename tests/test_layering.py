"""The package's import contracts (pyproject.toml [tool.importlinter]; docs/architecture.md):
layers import only downwards, and no package has an import cycle among its parts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold() -> None:
    linter = shutil.which("lint-imports")
    if linter is None:
        pytest.skip("lint-imports is absent (pip install -e .[dev])")
    done = subprocess.run([linter], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout
