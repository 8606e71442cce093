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


def test_argparse_stays_in_cli() -> None:
    """The command line's parsed flags stop in cli/: below it, options travel as typed values
    (pipeline/options.py, runners.AgentChoice), so the action and the pytest route, which parse
    no flags, drive the same code."""
    import ast

    package = ROOT / "src" / "agent_eval_action"
    importers = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name.split(".")[0] == "argparse" for name in names):
                importers.append(str(path.relative_to(package)))
    assert importers == []
