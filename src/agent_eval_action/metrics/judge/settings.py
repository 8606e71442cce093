"""The judge's settings, read once from the flags and the environment.

Environment: AGENT_EVAL_JUDGE_API_KEY (a key for the judge alone: it never reaches an
agent), else GOOGLE_API_KEY or GEMINI_API_KEY (the former wins, as in google-genai),
GOOGLE_GEMINI_BASE_URL (another endpoint, e.g. a proxy or a test fake), and
AGENT_EVAL_JUDGE_PRICES (a JSON price table merged over the built-in one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .budget import KeyBudget
from .caps import RETRYABLE_STATUS
from .pricing import PriceTable, load_prices

NO_KEY = "no GOOGLE_API_KEY/GEMINI_API_KEY"
JUDGE_KEY_ENV = "AGENT_EVAL_JUDGE_API_KEY"
PRICES_ENV = "AGENT_EVAL_JUDGE_PRICES"


@dataclass(frozen=True)
class RetryPolicy:
    """google-genai's HttpRetryOptions, with ADK's judge defaults (tests make them tiny)."""

    attempts: int = 7
    initial_delay: float = 5.0
    max_delay: float = 120.0
    exp_base: float = 2.0
    jitter: float = 1.0
    http_status_codes: tuple[int, ...] = RETRYABLE_STATUS


# Module-level so tests (and only tests) can shorten the waits.
DEFAULT_RETRY = RetryPolicy()
REQUEST_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class JudgeSettings:
    api_key: str | None = None
    base_url: str | None = None
    model_pin: str | None = None  # --judge-model: overrides every criterion's judge model
    cache_dir: Path | None = None  # --judge-cache
    cache_this_run: bool = False  # --judge-cache-this-run: its verdicts were asked this run
    parallelism: int = 8  # judge requests in flight at once, over the whole suite
    prices: PriceTable = field(default_factory=PriceTable)
    retry: RetryPolicy = field(default_factory=lambda: DEFAULT_RETRY)
    timeout_s: float = REQUEST_TIMEOUT_S
    # the calls this process may make on the key, the judge's and the simulator's (shared)
    budget: KeyBudget = field(default_factory=KeyBudget)


def judge_settings(
    environ: Mapping[str, str],
    *,
    model_pin: str | None = None,
    cache_dir: str | None = None,
    cache_this_run: bool = False,
    parallelism: int = 8,
    max_calls: int | None = None,
) -> JudgeSettings:
    """Raises InputError for a bad price table (AGENT_EVAL_JUDGE_PRICES)."""
    return JudgeSettings(
        api_key=environ.get(JUDGE_KEY_ENV)
        or environ.get("GOOGLE_API_KEY")
        or environ.get("GEMINI_API_KEY")
        or None,
        base_url=environ.get("GOOGLE_GEMINI_BASE_URL") or None,
        model_pin=model_pin,
        cache_dir=Path(cache_dir) if cache_dir else None,
        cache_this_run=cache_this_run,
        parallelism=parallelism,
        prices=load_prices(environ.get(PRICES_ENV) or None),
        retry=DEFAULT_RETRY,
        budget=KeyBudget(max_calls),
    )


def generation_config(user_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The generation config sent to the judge, as canonical JSON (part of the verdict key).

    As ADK sends it: empty unless the criterion's judge_model_config says otherwise.
    Its http_options (retries, timeouts) do not change a verdict and are left out.
    Raises ValueError for a config google-genai does not accept.
    """
    if not user_config:
        return {}
    from google.genai import types
    from pydantic import ValidationError

    try:
        config = types.GenerateContentConfig.model_validate(dict(user_config))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from None
    data = config.model_dump(mode="json", exclude_none=True)
    for transport_only in ("http_options", "automatic_function_calling"):
        data.pop(transport_only, None)
    return data


def user_retry(user_config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Retry options the user set in judge_model_config.http_options (ADK keeps them)."""
    http = (user_config or {}).get("http_options") or (user_config or {}).get("httpOptions")
    if isinstance(http, Mapping):
        retry = http.get("retry_options") or http.get("retryOptions")
        if isinstance(retry, Mapping):
            return dict(retry)
    return None
