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

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import msgspec

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
    """One JSON file per key under DIR/ab/abcd….json, written atomically (a temporary
    file in the same directory, then renamed), so concurrent runs never see half a file;
    two runs writing one key write the same question's answers, and either may win."""

    def __init__(self, root: Path):
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CacheEntry | None:
        try:
            entry = msgspec.json.decode(self._path(key).read_bytes(), type=CacheEntry)
        except (OSError, ValueError, msgspec.MsgspecError):
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
        path = self._path(key)
        data = CacheEntry(key=key, request=request, model=model, samples=list(samples), usage=usage)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:12]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(msgspec.json.encode(data).decode("utf-8"))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
