"""The suite: every eval file the eval paths name, each with the test_config.json that
applies to it (the --config file, else the one beside the eval file, else ADK's
defaults). Assembled here, above evalset/ (one eval file) and metrics/ (one config), so
that neither of those needs the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from ..errors import InputError
from ..evalset.discovery import discover, display_path
from ..evalset.loader import EvalFile, InitialSession, load_eval_file, load_initial_session
from ..metrics.config import EvalConfig, default_config, load_config

CONFIG_NAME = "test_config.json"
# Cases in one suite (all its eval files): past this a run is refused (docs/security.md,
# "Bounds"), as no gate needs it and every later stage's time and memory grow with it.
MAX_CASES = 100_000


class LoadedEvalSet(EvalFile):
    """An eval file's cases and the config they are scored with."""

    config: EvalConfig


class Suite(BaseModel):
    eval_sets: list[LoadedEvalSet]
    warnings: list[str] = Field(default_factory=list)

    @property
    def case_count(self) -> int:
        return sum(len(s.cases) for s in self.eval_sets)


def load_suite(
    eval_paths: Sequence[str], config_path: str | None = None, initial_session: str | None = None
) -> Suite:
    """`initial_session`: --initial-session, the session of every legacy row file."""
    warnings: list[str] = []
    override = load_config(Path(config_path), config_path, warnings) if config_path else None
    session = _initial_session(initial_session, warnings)
    configs: dict[Path, EvalConfig] = {}
    eval_sets: list[LoadedEvalSet] = []
    seen: dict[str, str] = {}
    cases = 0
    for target in discover(eval_paths):
        config = override or _config_beside(target.path, configs, warnings)
        loaded = LoadedEvalSet(**dict(load_eval_file(target, warnings, session)), config=config)
        if loaded.eval_set_id in seen:
            raise InputError(
                f'eval_set_id "{loaded.eval_set_id}" is also used by {seen[loaded.eval_set_id]}; '
                "each eval set needs its own id",
                loaded.file,
            )
        seen[loaded.eval_set_id] = loaded.file
        eval_sets.append(loaded)
        cases += len(loaded.cases)
        if cases > MAX_CASES:
            raise InputError(
                f"the suite has {cases:,} cases with this file; the limit is {MAX_CASES:,}",
                loaded.file,
            )
    return Suite(eval_sets=eval_sets, warnings=warnings)


def _initial_session(path: str | None, warnings: list[str]) -> InitialSession | None:
    if path is None:
        return None
    if not Path(path).is_file():
        raise InputError("--initial-session: no such file", path)
    return load_initial_session(Path(path), warnings)


def _config_beside(path: Path, cache: dict[Path, EvalConfig], warnings: list[str]) -> EvalConfig:
    folder = path.parent
    if folder not in cache:
        candidate = folder / CONFIG_NAME
        cache[folder] = (
            load_config(candidate, display_path(candidate), warnings)
            if candidate.is_file()
            else default_config()
        )
    return cache[folder]
