"""Which eval files an EVAL_PATH names: a file, a directory, or FILE:id1,id2 (as `adk eval`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

EVAL_SUFFIXES = (".evalset.json", ".test.json")
_SKIP_DIRS = {".git", ".adk", "node_modules", "__pycache__", ".venv", "venv"}


@dataclass(frozen=True)
class EvalTarget:
    path: Path
    root: Path  # the directory ids of legacy files are relative to
    ids: list[str] | None = None  # run only these cases

    def legacy_id(self) -> str:
        """A legacy file's stable id: its path below the eval root, without the suffix."""
        try:
            relative = self.path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            relative = self.path.name
        for suffix in (*EVAL_SUFFIXES, ".json"):
            if relative.endswith(suffix):
                return relative[: -len(suffix)]
        return relative


def display_path(path: Path) -> str:
    """The path as reports show it: relative to the working directory where possible."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def discover(eval_paths: Sequence[str]) -> list[EvalTarget]:
    if not eval_paths:
        raise InputError("no eval path given")
    targets: dict[Path, EvalTarget] = {}
    for spec in eval_paths:
        for target in _expand(spec):
            key = target.path.resolve()
            previous = targets.get(key)
            if previous is not None and previous.ids is not None and target.ids is not None:
                target = EvalTarget(target.path, target.root, [*previous.ids, *target.ids])
            elif previous is not None:
                target = EvalTarget(target.path, previous.root, None)
            targets[key] = target
    return list(targets.values())


def _expand(spec: str) -> list[EvalTarget]:
    path = Path(spec)
    ids = None
    if not path.exists() and ":" in spec:
        file, _, id_list = spec.partition(":")
        path = Path(file)
        ids = [i.strip() for i in id_list.split(",") if i.strip()]
        if not ids:
            raise InputError(f'"{spec}" names no eval ids after ":"')
    if path.is_dir():
        if ids is not None:
            raise InputError(f'"{spec}": eval ids can only follow a file, not a directory')
        files = sorted(
            p
            for p in path.rglob("*.json")
            if p.name.endswith(EVAL_SUFFIXES)
            and not _SKIP_DIRS.intersection(p.relative_to(path).parts)
        )
        if not files:
            raise InputError(f"no *.evalset.json or *.test.json files below {display_path(path)}")
        return [EvalTarget(p, path) for p in files]
    if path.is_file():
        return [EvalTarget(path, path.parent, ids)]
    raise InputError("no such file or directory", spec)
