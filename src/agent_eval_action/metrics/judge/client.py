"""The Gemini call: google-genai's async client, imported only when a judge call is due.

Requests are sent as ADK sends its judge's: the prompt as one user text part, the
generation config as configured (empty by default), automatic function calling off,
and retries on 408/429/5xx with exponential backoff (google-genai's HttpRetryOptions;
ADK's defaults unless the criterion's judge_model_config.http_options sets its own).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from .settings import JudgeSettings


class JudgeCallError(Exception):
    """A judge request failed after its retries. `outage`: Gemini was unreachable or
    overloaded (408/429/5xx, transport errors), as opposed to a refused request."""

    def __init__(self, message: str, outage: bool):
        super().__init__(message)
        self.outage = outage


@dataclass(frozen=True)
class Reply:
    text: str | None  # None: no text came back (blocked, empty)
    finish_reason: str | None
    prompt_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0


_TRANSPORT_MODULES = ("httpx", "httpcore", "aiohttp", "httpx2", "ssl", "socket")


def _is_transport_error(err: BaseException) -> bool:
    module = type(err).__module__.split(".")[0]
    return isinstance(err, OSError | TimeoutError) or module in _TRANSPORT_MODULES


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class GeminiClient:
    def __init__(self, settings: JudgeSettings):
        self._settings = settings
        self._client: Any = None

    def _ensure(self) -> Any:
        if self._client is None:
            from google import genai
            from google.genai import types

            self._client = genai.Client(
                api_key=self._settings.api_key,
                vertexai=False,
                http_options=types.HttpOptions(
                    base_url=self._settings.base_url,
                    timeout=int(self._settings.timeout_s * 1000),
                ),
            )
        return self._client

    def _config(self, generation_config: dict[str, Any], retry: dict[str, Any] | None) -> Any:
        from google.genai import types

        policy = self._settings.retry
        retry_options = (
            types.HttpRetryOptions.model_validate(retry)
            if retry is not None
            else types.HttpRetryOptions(
                attempts=policy.attempts,
                initial_delay=policy.initial_delay,
                max_delay=policy.max_delay,
                exp_base=policy.exp_base,
                jitter=policy.jitter,
                http_status_codes=list(policy.http_status_codes),
            )
        )
        config = types.GenerateContentConfig.model_validate(generation_config)
        config.automatic_function_calling = types.AutomaticFunctionCallingConfig(disable=True)
        config.http_options = types.HttpOptions(retry_options=retry_options)
        return config

    async def generate(
        self,
        model: str,
        prompt: str,
        generation_config: dict[str, Any],
        retry: dict[str, Any] | None = None,
    ) -> Reply:
        from google.genai import errors, types

        client = self._ensure()
        try:
            response = await client.aio.models.generate_content(
                model=model,
                contents=[types.Content(role="user", parts=[types.Part(text=prompt)])],
                config=self._config(generation_config, retry),
            )
        except errors.APIError as err:
            codes = retry["http_status_codes"] if retry and retry.get("http_status_codes") else None
            outage = (
                err.code in (codes or self._settings.retry.http_status_codes) or err.code >= 500
            )
            retried = " (still failing after retries)" if outage else ""
            raise JudgeCallError(
                _short(f"{err.code} {err.status or ''}: {err.message or err}") + retried, outage
            ) from None
        except asyncio.CancelledError:
            raise
        except Exception as err:
            transport = _is_transport_error(err)
            kind = "cannot reach Gemini (after retries)" if transport else "judge call failed"
            raise JudgeCallError(
                _short(f"{kind}: {type(err).__name__}: {err}"), transport
            ) from None
        return _reply(response)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aio.aclose()
            self._client = None


def _reply(response: Any) -> Reply:
    candidates = response.candidates or []
    text: str | None = None
    finish: str | None = None
    if candidates:
        first = candidates[0]
        finish = getattr(first.finish_reason, "value", first.finish_reason)
        parts = first.content.parts if first.content and first.content.parts else []
        texts = [p.text for p in parts if p.text and not p.thought]
        text = "".join(texts) if texts else None
    elif response.prompt_feedback is not None and response.prompt_feedback.block_reason:
        reason = response.prompt_feedback.block_reason
        finish = f"PROMPT_BLOCKED_{getattr(reason, 'value', reason)}"
    usage = response.usage_metadata
    return Reply(
        text=text,
        finish_reason=finish,
        prompt_tokens=(usage.prompt_token_count or 0) if usage else 0,
        output_tokens=(usage.candidates_token_count or 0) if usage else 0,
        thinking_tokens=(usage.thoughts_token_count or 0) if usage else 0,
        cached_tokens=(usage.cached_content_token_count or 0) if usage else 0,
    )
