"""What judge calls cost: a price table (prices.json in this package, USD per 1M tokens),
optionally overridden by a file of the same shape named in AGENT_EVAL_JUDGE_PRICES.

cost = (prompt - cached) * input + cached * cached_input + (output + thinking) * output,
at the long-context rates when the prompt is over their threshold. A model not in the
table has no price: its cost is None ("n/a"), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import InputError
from ...files import jsonpos, read_text


class _Rates(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)


class _LongContext(_Rates):
    above_prompt_tokens: int = Field(ge=0)


class Price(_Rates):
    long_context: _LongContext | None = None


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")

    about: str = ""
    models: dict[str, Price]


def _model_id(model: str) -> str:
    return model.removeprefix("models/")


@dataclass(frozen=True)
class PriceTable:
    models: dict[str, Price] = field(default_factory=dict)
    source: str = "built-in"

    def cost(
        self, model: str, prompt: int, output: int, thinking: int = 0, cached: int = 0
    ) -> float | None:
        price = self.models.get(_model_id(model))
        if price is None:
            return None
        rates: _Rates = price
        if price.long_context is not None and prompt > price.long_context.above_prompt_tokens:
            rates = price.long_context
        cached = min(cached, prompt)
        cached_rate = rates.cached_input if rates.cached_input is not None else rates.input
        total = (
            (prompt - cached) * rates.input
            + cached * cached_rate
            + (output + thinking) * rates.output
        )
        return total / 1_000_000


def _read(text: str, display: str) -> dict[str, Price]:
    data = jsonpos.loads(text, display)
    try:
        return _Table.model_validate(data).models
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"price table: {where}: {first['msg']}", display) from None


def load_prices(override: str | None = None) -> PriceTable:
    """The built-in table, with the models of the override file (if any) replacing theirs."""
    builtin = resources.files(__package__).joinpath("prices.json").read_text("utf-8")
    models = _read(builtin, "prices.json")
    if override is None:
        return PriceTable(models)
    text = read_text(Path(override), override)
    return PriceTable({**models, **_read(text, override)}, source=override)
