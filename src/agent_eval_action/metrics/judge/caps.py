"""What the PR's configs may ask of the judge's key, each cap declared once here
(docs/security.md, "Caps"): which models the judge may call, which generation options a
judged criterion (`judge_model_config`) and the user simulator (`model_configuration`) may
set and how many tokens a call may spend. How many calls a job may make on the key is
pipeline/options.py's `judge_max_calls`, spent through budget.py.

The eval files and test_config.json are the PR's; the key is not. A config past a cap is
bad input when it is read; a call past the job's budget (budget.py) is refused unmade."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

# --- generation options (the judge's and the user simulator's) -----------------------------
MAX_THINKING_BUDGET = 10240  # ADK's simulator's default budget: a config may lower it
MAX_OUTPUT_TOKENS = 16384  # per call: thoughts and the message (Gemini counts both in it)
# what a config's generation options may set: sampling, and the two token caps above
GENERATION_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "seed",
        "stop_sequences",
        "presence_penalty",
        "frequency_penalty",
        "safety_settings",
        "max_output_tokens",
        "thinking_config",
    }
)
THINKING_OPTIONS = frozenset({"include_thoughts", "thinking_budget"})
# a judged criterion's judge_model_config may also carry http_options.retry_options, which
# ADK keeps: each within this tool's own policy (settings.RetryPolicy's defaults, ADK's), so
# that neither the calls (attempts) nor the waits (a stage has no deadline of its own) nor
# what is retried (a 400 the PR's long answer provokes) can be stretched
MAX_RETRY_ATTEMPTS = 7
MAX_RETRY_DELAY_S = 120.0  # initial_delay and max_delay
MAX_RETRY_EXP_BASE = 2.0
MAX_RETRY_JITTER = 1.0
RETRYABLE_STATUS = (408, 429, 500, 502, 503, 504)  # http_status_codes: a subset of these


@functools.cache
def default_judge_models() -> tuple[str, ...]:
    """The models the judge may call unless `judge-models` says otherwise: those with a
    price in the built-in table (prices.json), so that every call's cost is known."""
    from .pricing import load_prices

    return tuple(sorted(load_prices().models))


def allowed_judge_models(given: Iterable[str] = ()) -> tuple[str, ...]:
    """The judge's allow-list: the models `judge-models` names (they replace the default
    list), else default_judge_models()."""
    named = tuple(model.removeprefix("models/") for model in given)
    return named or default_judge_models()


def judge_model_refusal(model: str, allowed: Iterable[str]) -> str | None:
    """Why the judge may not call `model` (None: it may)."""
    listed = tuple(allowed)
    if model.removeprefix("models/") in listed:
        return None
    return (
        f'"{model}" is not a model the judge may use: one of {", ".join(listed)} (the '
        "action's judge-models input, the CLI's --judge-models, lists others)"
    )


def check_generation(config: Mapping[str, Any], who: str) -> None:
    """The generation options (canonical keys, as settings.generation_config gives them)
    within the caps. Raises ValueError naming the first that is not; `who`: whose options
    (the user simulator, the judge)."""
    unknown = sorted(set(config) - GENERATION_OPTIONS) or sorted(
        set(config.get("thinking_config") or {}) - THINKING_OPTIONS
    )
    if unknown:
        allowed = ", ".join(sorted(GENERATION_OPTIONS | THINKING_OPTIONS))
        raise ValueError(f"{unknown[0]} cannot be set for {who} (allowed: {allowed})")
    budget = (config.get("thinking_config") or {}).get("thinking_budget", 0)
    if not 0 <= budget <= MAX_THINKING_BUDGET:
        raise ValueError(f"thinking_budget must be 0 to {MAX_THINKING_BUDGET} (the cap)")
    if not 1 <= config.get("max_output_tokens", 1) <= MAX_OUTPUT_TOKENS:
        raise ValueError(f"max_output_tokens must be 1 to {MAX_OUTPUT_TOKENS} (the cap)")


def check_retry(retry: Mapping[str, Any] | None) -> None:
    """A judged criterion's http_options.retry_options within the caps above. Raises
    ValueError naming the option."""
    from pydantic.alias_generators import to_snake

    options = {to_snake(key): value for key, value in (retry or {}).items()}
    caps: dict[str, tuple[float, float]] = {
        "attempts": (1, MAX_RETRY_ATTEMPTS),
        "initial_delay": (0, MAX_RETRY_DELAY_S),
        "max_delay": (0, MAX_RETRY_DELAY_S),
        "exp_base": (1, MAX_RETRY_EXP_BASE),
        "jitter": (0, MAX_RETRY_JITTER),
    }
    for name, value in options.items():
        what = f"http_options.retry_options.{name}"
        if name == "http_status_codes":
            allowed = ", ".join(map(str, RETRYABLE_STATUS))
            if not isinstance(value, list) or not set(value) <= set(RETRYABLE_STATUS):
                raise ValueError(f"{what} may name only {allowed} (the cap)")
            continue
        if name not in caps:
            raise ValueError(f"{what} is not an option this tool lets a config set")
        low, high = caps[name]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if (
            not number
            or not low <= value <= high
            or (name == "attempts" and not isinstance(value, int))
        ):
            raise ValueError(f"{what} must be {low:g} to {high:g} (the cap)")


def with_token_caps(config: Mapping[str, Any], *, thinking: bool) -> dict[str, Any]:
    """The generation options as sent: the output cap filled in where it is left open, and
    (`thinking`: the model thinks, as every simulator model does) the thinking budget. The
    judge's models need not think (gemini-2.0-flash does not, and refuses the option), so
    its output cap alone bounds a call: Gemini counts thoughts in it."""
    sent = dict(config)
    sent.setdefault("max_output_tokens", MAX_OUTPUT_TOKENS)
    if thinking:
        budget = dict(sent.get("thinking_config") or {})
        budget.setdefault("thinking_budget", MAX_THINKING_BUDGET)
        sent["thinking_config"] = budget
    return sent
