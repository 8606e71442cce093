"""Running a program as PID 1 of a PID namespace of its own, as the image's ENTRYPOINT runs
in its container (init.py): `unshare --pid --fork --mount-proc`, where this machine allows
it (root, and a kernel or container that lets root make namespaces)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

UNSHARE = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")


@functools.cache
def can_unshare() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    done = subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30)
    return done.returncode == 0


def as_pid1(argv: Sequence[str]) -> list[str]:
    """`argv` started as PID 1 of a new PID namespace (its own /proc)."""
    return [*UNSHARE, *argv]


def namespace_init(unshare_pid: int) -> int | None:
    """The pid (as this namespace sees it) of the namespace's PID 1: unshare's child."""
    try:
        children = Path(f"/proc/{unshare_pid}/task/{unshare_pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None
