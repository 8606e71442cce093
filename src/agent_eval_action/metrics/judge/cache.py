"""Verdict reuse: the key of a judge request, and where earlier answers are found.

The key hashes the fully rendered prompt (so every input the judge sees: user text,
reference, answer, tool calls and results, instructions, rubrics, the template
itself) with the judge model, the generation config, num_samples, the kind of request
and its parser's version. Equal key, equal question: the earlier samples are reused and
re-read, and no call is made. Sources, in order: this run (the same question asked
twice), the baseline Results (`run --baseline`), the local cache directory
(`--judge-cache DIR`). Each entry keeps the usage of the call that asked it: a cache that
holds only this run's verdicts (`--judge-cache-this-run`: the action's confirmation rounds,
each a score stage of its own) counts a hit as the call it was, so the Results' usage is
what the whole run spent.

Only answers that gave a verdict are kept, so a failed or unreadable one is asked again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ...errors import InputError
from ...files import read_bytes, write_whole
from ...results import JudgeSample, Record, Results, Usage

KEY_FORMAT = "1"


def verdict_key(
    request: str, parser_version: str, prompt: str, model: str, config: dict, num_samples: int
) -> str:
    payload = {
        "key_format": KEY_FORMAT,
        "request": request,
        "parser_version": parser_version,
        "model": model.removeprefix("models/"),
        "generation_config": config,
        "num_samples": num_samples,
        "prompt": prompt,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def baseline_verdicts(baseline: Results | None) -> dict[str, list[JudgeSample]]:
    """Every reusable verdict of a baseline Results, by key."""
    found: dict[str, list[JudgeSample]] = {}
    for case in baseline.cases if baseline is not None else ():
        for metric in case.metrics.values():
            for verdict in metric.judge.verdicts if metric.judge is not None else ():
                if verdict.error is None and verdict.samples:
                    found.setdefault(verdict.key, verdict.samples)
    return found


class CacheEntry(Record, kw_only=True):
    key: str
    request: str
    model: str
    samples: list[JudgeSample]
    usage: Usage | None = None  # the call's (entries written before it was kept: None)


class DirectoryCache:
    """One JSON file per key under DIR/ab/abcd….json, written whole or not at all
    (files.write_whole), so concurrent runs never see half a file; two runs writing one
    key write the same question's answers, and either may win."""

    def __init__(self, root: Path):
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CacheEntry | None:
        path = self._path(key)
        try:
            entry = msgspec.json.decode(read_bytes(path, str(path)), type=CacheEntry)
        except (InputError, ValueError, msgspec.MsgspecError):
            return None  # absent, or damaged: ask again
        return entry if entry.key == key and entry.samples else None

    def put(
        self,
        key: str,
        request: str,
        model: str,
        samples: Sequence[JudgeSample],
        usage: Usage | None = None,
    ) -> None:
        data = CacheEntry(key=key, request=request, model=model, samples=list(samples), usage=usage)
        write_whole(self._path(key), msgspec.json.encode(data))
