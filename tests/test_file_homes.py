"""The package reads and writes files only in its declared homes (docs/architecture.md):
`files/reading.py` (input files, capped, and no link followed below the checkout),
`files/writing.py` (whole or not at all, moved into place, grown a line at a time) and
`files/safe.py` (by descriptor, never through a link). A read or write anywhere else keeps
none of what they promise: this test finds every call that opens, reads, writes or renames
a file outside files/ and fails on each that the allow-list does not name, with its reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping

from helpers.paths import ROOT

PACKAGE = ROOT / "src" / "agent_eval_action"
HOME = "files/"
# functions, by what they resolve to (`from os import replace as r; r()` is os.replace)
FUNCTIONS = {
    "open": "open",
    "io.open": "open",
    "builtins.open": "open",
    "os.open": "os.open",
    "os.replace": "os.replace",
    "os.rename": "os.rename",
    "tempfile.NamedTemporaryFile": "tempfile.NamedTemporaryFile",
    "tempfile.mkstemp": "tempfile.mkstemp",
}
# methods, whatever they are called on (a Path, importlib.resources' Traversable)
METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "rename"}
# `.open` with a file mode: Path.open("rb"); not ZipFile.open(member) or Worktree.open()
MODE = re.compile(r"[rwxab+t]{1,3}")

# (module below src/agent_eval_action, call): why it reads or writes outside files/
ALLOWED = {
    ("metrics/judge/pricing.py", ".read_text"): "the built-in price table: packaged data, read through importlib.resources",
    ("metrics/judge/prompts.py", ".read_text"): "the judge's prompt templates: packaged data, read through importlib.resources",
    ("runners/reaper.py", "os.open"): "/proc/<pid>/stat, status and environ: the kernel's view of a process, no one's input file",
    ("cli/__init__.py", "os.open"): "/dev/null, put in place of a standard output whose reader has left",
    ("action/sandbox.py", "os.open"): "shared folders and the uid claims' lock files, opened by descriptor, no link followed",
    ("action/agent_run.py", "os.open"): "a round's plan (root's file) handed to an agent stage as its standard input",
    ("action/agent_run.py", ".open"): "serve-users' standard error, into a log file relayed once it exits",
    ("github/artifacts.py", ".open"): "the first four bytes of a downloaded artifact: a zip, or one file stored as is",
}  # fmt: skip


def _package_of(module: str) -> str:
    """The dotted package a module below src/agent_eval_action is in."""
    parts = ["agent_eval_action", *module.removesuffix(".py").split("/")]
    return ".".join(parts[:-1])


def _imported(tree: ast.AST, package: str) -> dict[str, str]:
    """Each name the module imports, and what it names (`import os.path` binds os: "os")."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.name if alias.asname else alias.name.split(".")[0]
                names[alias.asname or bound] = bound
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node.module, node.level, package)
            for alias in node.names:
                names[alias.asname or alias.name] = f"{source}.{alias.name}"
    return names


def _absolute(module: str | None, level: int, package: str) -> str:
    """The module a `from` import names (`from ..files import x` in agent_eval_action.action:
    agent_eval_action.files)."""
    parts = package.split(".")
    base = parts[: len(parts) - level + 1] if level else []
    return ".".join([*base, *([module] if module else [])])


def _call(node: ast.Call, names: Mapping[str, str]) -> str | None:
    """What the call reads or writes with, as ALLOWED names it; None: no file I/O of ours
    to check (not one of the calls above, or one of files/' own)."""
    func = node.func
    if isinstance(func, ast.Name):
        return FUNCTIONS.get(names.get(func.id, func.id))
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id in names:
        qualified = f"{names[func.value.id]}.{func.attr}"
        if qualified in FUNCTIONS or qualified.startswith("agent_eval_action.files."):
            return FUNCTIONS.get(qualified)
    if func.attr in METHODS:
        return f".{func.attr}"
    if func.attr == "open" and _given_a_mode(node):
        return ".open"
    return None


def _given_a_mode(node: ast.Call) -> bool:
    if any(keyword.arg == "mode" for keyword in node.keywords):
        return True
    first = node.args[0] if node.args else None
    return isinstance(first, ast.Constant) and bool(MODE.fullmatch(str(first.value)))


def file_calls(source: str, module: str) -> Iterator[tuple[int, str]]:
    """(line, call) of each call in the module's source that reads or writes a file."""
    tree = ast.parse(source)
    names = _imported(tree, _package_of(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (call := _call(node, names)) is not None:
            yield node.lineno, call


def strays(sources: Mapping[str, str]) -> list[str]:
    """`module:line: call` for each call outside files/ that ALLOWED does not name."""
    return [
        f"{module}:{line}: {call}"
        for module, source in sorted(sources.items())
        if not module.startswith(HOME)
        for line, call in sorted(file_calls(source, module))
        if (module, call) not in ALLOWED
    ]


def _package_sources() -> dict[str, str]:
    return {
        path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_every_file_is_read_and_written_through_its_home():
    found = strays(_package_sources())
    assert not found, (
        "a file read or written outside files/ (use agent_eval_action.files, or allow the "
        "call in tests/test_file_homes.py with its reason):\n" + "\n".join(found)
    )


def test_each_allowed_call_is_still_made():
    made = {
        (module, call)
        for module, source in _package_sources().items()
        for _, call in file_calls(source, module)
    }
    gone = sorted(set(ALLOWED) - made)
    assert not gone, f"no longer made: take them off ALLOWED: {gone}"


BYPASSES = """
import os
import tempfile as scratch
from os import replace as move_over
from pathlib import Path

from .. import files
from ..files import read_text


def bypasses(path: Path) -> None:
    path.write_text("x")
    Path("a").read_bytes()
    open(path, "w")
    os.open(path, os.O_RDONLY)
    move_over(path, path)
    scratch.mkstemp()
    path.open("rb")


def homes(path: Path, archive, worktree) -> None:
    read_text(path, "display")
    files.write_whole(path, "x")
    "text".replace("a", "b")
    archive.open("member.json")
    worktree.open()
"""


def test_the_checker_names_the_module_line_and_call_of_each_bypass():
    assert strays({"action/example.py": BYPASSES, "files/example.py": BYPASSES}) == [
        "action/example.py:12: .write_text",
        "action/example.py:13: .read_bytes",
        "action/example.py:14: open",
        "action/example.py:15: os.open",
        "action/example.py:16: os.replace",
        "action/example.py:17: tempfile.mkstemp",
        "action/example.py:18: .open",
    ]
