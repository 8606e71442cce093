"""Names a reader would take for one thing are declared once in the package: two classes,
constants or functions of one name in two modules (a `Baseline` of the gate's and one of
the action's settings, an `EPSILON` per module) once made a reader, and an import, pick
the wrong one. Conventions every module of a kind shares (a subcommand's `handle`) are
listed, each with why."""

from __future__ import annotations

import ast
from collections import defaultdict

from helpers.paths import ROOT

PACKAGE = ROOT / "src" / "agent_eval_action"
# the same name in several modules, on purpose
SHARED = {
    # each subcommand module's interface (cli/__init__.py calls them by module)
    "add_arguments": "cli subcommands",
    "handle": "cli subcommands",
    # ADK's eval-file models and the Results' own lean records of the same shapes
    "Content": "evalset/models.py vs results.py",
    "Part": "evalset/models.py vs results.py",
    "FunctionCall": "evalset/models.py vs results.py",
    "FunctionResponse": "evalset/models.py vs results.py",
    # each built-in metric module's constants and scoring entry point
    "score_run": "built-in metric modules",
    "NOTE": "built-in metric modules",
    "RUBRICS": "built-in metric modules",
    "VERDICT": "built-in metric modules",
}
# declared twice before this test, each meaning another thing in each module: a debt, listed
# so that it only shrinks (rename one when touching it, and take it off)
KNOWN = {
    "Cancelled", "Mode", "MODES", "FILE_NAME", "SCHEMA", "FORMATS", "MAX_RESULTS_BYTES",
    "Verdict", "Case", "TRAJECTORY_POLICIES", "SKIPPED", "Measured", "WIDTH", "TEXT_CHARS",
}  # fmt: skip
# the names this test was written for: each declared in exactly one module
ONCE = ["REGRESSIONS", "headline", "Baseline", "Usage", "EPSILON", "case_notes", "confirmed"]


def _declared() -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                where[node.name].append(module)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                where.update(
                    {t.id: [*where[t.id], module] for t in targets if isinstance(t, ast.Name)}
                )
    return where


def test_each_of_the_names_once_confused_is_declared_in_one_module():
    where = _declared()
    twice = {name: where[name] for name in ONCE if len(where.get(name, [])) > 1}
    assert not twice, f"declared in more than one module: {twice}"


def test_the_known_debt_only_shrinks():
    where = _declared()
    paid = sorted(name for name in KNOWN if len(set(where.get(name, []))) < 2)
    assert not paid, f"declared once now: take them off KNOWN: {paid}"


def test_no_public_class_or_constant_is_declared_twice_but_the_listed_conventions():
    where = _declared()
    twice = {
        name: modules
        for name, modules in where.items()
        if len(set(modules)) > 1
        and name not in SHARED
        and name not in KNOWN
        and not name.startswith("_")
        and (name[0].isupper())  # classes and constants: what imports pick by name
    }
    assert not twice, f"declared in more than one module: {twice}"
