"""`pr.json`: which PR and head commit a run's results belong to, saved beside them so that
the fork-safe `workflow_run` job (mode: comment) knows where to post.

That job reads it from an artifact a fork's code could have written, so it is untrusted:
it is parsed strictly, small, and only believed after GitHub confirms that this PR's head
is the commit the triggering run ran on (docs/security.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..files import read_bytes, write_whole

FILE_NAME = "pr.json"
SCHEMA = "agent-eval-pr/1"
MAX_BYTES = 4096
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class PrRecord:
    number: int
    head_sha: str
    base_sha: str | None = None

    def write(self, out_dir: Path) -> Path:
        path = out_dir / FILE_NAME
        data = {"schema": SCHEMA, "number": self.number, "head_sha": self.head_sha}
        if self.base_sha:
            data["base_sha"] = self.base_sha
        write_whole(path, json.dumps(data, indent=1) + "\n")
        return path


def read(path: Path, source: str) -> PrRecord:
    """The record in the file at `path`, taken out of `source` (an artifact): read only up
    to a record's size, then parsed as `parse` does."""
    return parse(read_bytes(path, f"{FILE_NAME} of {source}", MAX_BYTES), source)


def parse(data: bytes, source: str) -> PrRecord:
    """The record from an artifact's bytes; anything unexpected is an InputError."""
    if len(data) > MAX_BYTES:
        raise InputError(f"{FILE_NAME} is {len(data)} bytes, more than a PR record can be", source)
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(f"{FILE_NAME} is not JSON", source) from None
    if not isinstance(value, dict) or value.get("schema") != SCHEMA:
        raise InputError(f'{FILE_NAME} is not a PR record (schema "{SCHEMA}")', source)
    number, head = value.get("number"), value.get("head_sha")
    if type(number) is not int or not 0 < number < 2**31:
        raise InputError(f"{FILE_NAME}: number must be a PR number, got {number!r}", source)
    if not isinstance(head, str) or not _SHA.match(head):
        raise InputError(f"{FILE_NAME}: head_sha must be a commit sha", source)
    base = value.get("base_sha")
    return PrRecord(number, head, base if isinstance(base, str) and _SHA.match(base) else None)
