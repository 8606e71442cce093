"""Running a stage's coroutine so that SIGTERM or SIGINT cancels it cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable
from typing import TypeVar

_T = TypeVar("_T")


class Cancelled(Exception):
    """SIGTERM or SIGINT arrived while a stage ran; what it finished is kept."""


def run_cancellable(coroutine: Awaitable[_T]) -> _T:
    """Run the coroutine to its end; SIGTERM or SIGINT cancels it and raises Cancelled."""

    async def main() -> _T:
        task = asyncio.ensure_future(coroutine)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, task.cancel)
        return await task

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        raise Cancelled from None
