"""Evaluate an agent served by `adk api_server` through its REST API (`--adk-api URL --adk-app NAME`).

The endpoints, as google-adk 2.13's server defines them (cli/api_server.py):

    GET  /health                                   -> {"status": "ok"}
    GET  /list-apps                                -> ["app", ...]
    POST /apps/{app}/users/{user}/sessions         {"sessionId": ..., "state": {...}} -> Session
    POST /run                                      {"appName", "userId", "sessionId", "newMessage"}
                                                   -> [Event, ...] (camelCase JSON, this turn's events)
    DELETE /apps/{app}/users/{user}/sessions/{id}

Each case-run gets a new session with a unique, URL-safe id (`adk-eval-session-...`,
ADK's prefix, which the server leaves out of its session listing), created with
the case's `session_input.state` under its `user_id` (default "test_user_id"), so
`session_input.app_name` and `session_id` give way to NAME and the fresh id. The
turns are posted to /run one by one and captured from the returned events as
`adk eval` captures them; the session is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from ..errors import InputError
from ..evalset.models import Content
from ..traces import ActualTurn, CaseRunRequest, CaseRunTrace, NextUser, fixed_turns
from .adk_events import DEFAULT_USER_ID, INSTALL_HINT, TurnCapture, new_session_id
from .base import OnTrace, RunnerStartError
from .pool import NO_EVENTS, CaseRunError, PlayTurn, run_case_run, run_pool

# How long to wait for a server that is still starting (CI often starts it just before).
STARTUP_WAIT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
DELETE_TIMEOUT_S = 5.0
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}


class ApiError(CaseRunError):
    """The server answered a request with an error, or not at all."""


def check_api_flags(url: str | None, app: str | None) -> tuple[str, str]:
    """`--adk-api URL --adk-app NAME`, checked; InputError on bad usage."""
    if url is None or not app:
        raise InputError("--adk-api URL needs --adk-app NAME (the agent's app name on the server)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"--adk-api: {url!r} is not an http:// or https:// URL")
    try:
        import httpx  # noqa: F401  (google-adk depends on it)
    except ImportError:
        raise InputError(f"--adk-api needs httpx, which is not installed: {INSTALL_HINT}") from None
    return url.rstrip("/"), app


async def run_api_suite(
    requests: Sequence[CaseRunRequest],
    url: str,
    app_name: str,
    *,
    concurrency: int = 8,
    timeout: float = 600.0,
    on_trace: OnTrace | None = None,
    next_user: NextUser = fixed_turns,
    startup_wait_s: float = STARTUP_WAIT_S,
) -> list[CaseRunTrace]:
    """Run every case-run against the app on the server: one trace per request, in order."""
    import httpx

    client = httpx.AsyncClient(
        base_url=url,
        # Turns are bounded by the case-run timeout, not by a read timeout.
        timeout=httpx.Timeout(CONNECT_TIMEOUT_S, read=None),
        limits=httpx.Limits(max_connections=concurrency + 2),
        # A proxy from the environment applies to remote servers, never to this machine.
        trust_env=urlsplit(url).hostname not in LOOPBACK_HOSTS,
    )
    async with client:
        await _check_server(client, url, app_name, startup_wait_s)
        return await run_pool(
            requests,
            lambda request: run_case_run(
                request,
                functools.partial(_conversation, client, app_name),
                timeout=timeout,
                next_user=next_user,
            ),
            concurrency=concurrency,
            on_trace=on_trace,
        )


async def _check_server(client: Any, url: str, app_name: str, wait_s: float) -> None:
    """The server is up and serves the app; RunnerStartError says what is wrong."""
    import httpx

    deadline = time.monotonic() + wait_s
    while True:
        try:
            health = await client.get("/health")
            break
        except httpx.TransportError as exc:
            if time.monotonic() >= deadline:
                raise RunnerStartError(
                    f"--adk-api: cannot reach the ADK API server at {url}: {_transport_reason(exc)}"
                ) from None
            await asyncio.sleep(0.25)
    if health.status_code != 200:
        raise RunnerStartError(
            f"--adk-api: {url}/health answered HTTP {health.status_code}; "
            "is this an `adk api_server`?"
        )
    try:
        listed = await client.get("/list-apps")
        apps = listed.json() if listed.status_code == 200 else None
    except (httpx.TransportError, ValueError):
        apps = None
    if isinstance(apps, list) and app_name not in apps:
        served = ", ".join(sorted(str(a) for a in apps)) or "none"
        raise RunnerStartError(
            f"--adk-app: the server at {url} does not serve an app named {app_name!r} "
            f"(it serves: {served})"
        )


def _transport_reason(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@contextlib.asynccontextmanager
async def _conversation(
    client: Any, app_name: str, request: CaseRunRequest
) -> AsyncIterator[PlayTurn]:
    session_input = request.session_input
    user_id = session_input.user_id if session_input else DEFAULT_USER_ID
    if "/" in user_id:  # the server decodes %2F before routing: no URL can carry it
        raise ApiError(
            f"session_input.user_id {user_id!r} has a '/', which adk api_server cannot route"
        )
    session_id = new_session_id(request)
    sessions = f"/apps/{quote(app_name, safe='')}/users/{quote(user_id, safe='')}/sessions"
    await _post(
        client,
        sessions,
        {"sessionId": session_id, "state": session_input.state if session_input else {}},
        "creating the session",
    )

    async def play(user_content: Content) -> ActualTurn:
        started = time.monotonic()
        events = await _post(
            client,
            "/run",
            {
                "appName": app_name,
                "userId": user_id,
                "sessionId": session_id,
                "newMessage": user_content.model_dump(mode="json", exclude_none=True),
            },
            "POST /run",
        )
        if not isinstance(events, list):
            raise ApiError(f"POST /run answered {type(events).__name__} JSON, not a list of events")
        capture = TurnCapture()
        for event in events:
            if isinstance(event, dict):
                capture.add(event)
        if capture.empty:
            raise ApiError(NO_EVENTS)
        return capture.turn(time.monotonic() - started)

    try:
        yield play
    finally:
        # Best effort: a server that cannot delete keeps an orphan session, nothing worse.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                client.delete(f"{sessions}/{quote(session_id, safe='')}"), DELETE_TIMEOUT_S
            )


async def _post(client: Any, path: str, body: dict[str, Any], what: str) -> Any:
    import httpx

    try:
        response = await client.post(path, json=body)
    except httpx.TransportError as exc:
        raise ApiError(f"{what} failed: {_transport_reason(exc)}") from None
    if response.status_code != 200:
        raise ApiError(f"{what} failed: HTTP {response.status_code}: {_detail(response)}")
    try:
        return response.json()
    except ValueError:
        raise ApiError(f"{what} answered something that is not JSON") from None


def _detail(response: Any) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    text = detail if isinstance(detail, str) else json.dumps(detail) if detail else response.text
    text = " ".join(str(text).split())
    return (text[:300] + "…") if len(text) > 300 else text or "(no body)"
