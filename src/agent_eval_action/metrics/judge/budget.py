"""The calls a process may still make on the judge's key: one budget for the judge's and
the user simulator's calls (they share the key), spent before each call is made, never
after. A call the budget cannot pay for is not made: the caller counts it as refused.

In the action the key is held by several trusted processes one after another (each
confirmation round's `serve-users` and score stage): root gives each the budget the job
has left (`--judge-max-calls`) and reads back what it spent (`--key-spent FILE`, a
`KeySpent` record the trusted process writes in root's private folder), so the job's
calls over every round stay within the one budget (docs/security.md, "Caps")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import InputError
from ...files import read_text, write_whole

SPENT_SCHEMA: Literal["agent-eval-key-spent/1"] = "agent-eval-key-spent/1"
Caller = Literal["judge", "simulator"]


class KeySpent(BaseModel):
    """What one process spent of its budget on the judge's key."""

    model_config = ConfigDict(extra="forbid")

    key_spent: Literal["agent-eval-key-spent/1"] = SPENT_SCHEMA
    limit: int | None = Field(ge=0)  # what it was given (None: no limit)
    judge_calls: int = Field(0, ge=0)
    simulator_calls: int = Field(0, ge=0)
    refused: int = Field(0, ge=0)  # calls not made: the budget could not pay for them

    @property
    def calls(self) -> int:
        return self.judge_calls + self.simulator_calls


@dataclass
class KeyBudget:
    """`limit`: the most calls this process may make (None: no limit, e.g. a test's own
    settings). Spent by `take`, which pays for a request's calls whole or not at all."""

    limit: int | None = None
    judge_calls: int = 0
    simulator_calls: int = 0
    refused: int = 0

    @property
    def spent(self) -> int:
        return self.judge_calls + self.simulator_calls

    @property
    def left(self) -> int | None:
        return None if self.limit is None else max(self.limit - self.spent, 0)

    def take(self, calls: int, caller: Caller) -> bool:
        """Pay for `calls` calls of `caller` (True), or refuse them all (False, counted).
        Never awaits: concurrent requests of one event loop cannot both take the last."""
        left = self.left
        if left is not None and calls > left:
            self.refused += calls
            return False
        if caller == "judge":
            self.judge_calls += calls
        else:
            self.simulator_calls += calls
        return True

    def refusal(self) -> str:
        """Why a call was refused, for the Results and the report."""
        return (
            "no calls on the judge's key are left for this job (its budget: the action's "
            "judge-max-calls input, the CLI's --judge-max-calls)"
        )

    def record(self) -> KeySpent:
        return KeySpent(
            limit=self.limit,
            judge_calls=self.judge_calls,
            simulator_calls=self.simulator_calls,
            refused=self.refused,
        )

    def write(self, path: Path) -> None:
        write_whole(path, self.record().model_dump_json())


def read_spent(path: Path) -> KeySpent:
    """A KeySpent record (InputError when it is not one)."""
    try:
        return KeySpent.model_validate_json(read_text(path, str(path)))
    except (OSError, ValueError, ValidationError) as err:
        raise InputError(f"cannot read the key's spending record: {err}", str(path)) from None
