"""A thin GitHub REST client on `requests` (docs/reliability.md for retries and rate limits; docs/security.md for where the token goes).

Retries 5xx and connection errors on GET/PATCH/PUT/DELETE only: a POST that may have been
performed is never repeated blindly (the caller re-lists first). Rate-limited responses
(403/429 with `retry-after` or an exhausted `x-ratelimit-remaining`) are waited out for every
method, because GitHub refused them without acting, up to a cap on the total wait.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from ..files import Sink, replacing

DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = "agent-eval-action"
RETRIED_METHODS = frozenset({"GET", "PATCH", "PUT", "DELETE"})
RETRIED_STATUSES = (500, 502, 503, 504)
ARTIFACT_MAX_BYTES = 512 * 1024 * 1024
_CHUNK = 1 << 16  # bytes of a download written at a time (github/artifacts.py: why so few)
SECONDARY_DEFAULT_WAIT = 60.0  # GitHub's advice when a secondary limit names no wait


class GitHubError(Exception):
    """A GitHub API call failed; `status` is None when no response arrived."""

    def __init__(self, status: int | None, message: str, url: str):
        super().__init__(message)
        self.status = status
        self.message = message
        self.url = url

    def __str__(self) -> str:
        return f"GitHub API {self.status or 'unreachable'} for {self.url}: {self.message}"


class ArtifactExpired(GitHubError):
    """The artifact's retention ran out (HTTP 410); its zip cannot be downloaded any more."""


def _retry(retries: int, backoff: float) -> Retry:
    return Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=backoff,
        backoff_jitter=backoff / 2,
        status_forcelist=RETRIED_STATUSES,
        allowed_methods=RETRIED_METHODS,
        raise_on_status=False,
        respect_retry_after_header=False,
    )


def _session(retries: int, backoff: float) -> requests.Session:
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=_retry(retries, backoff))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _error_message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:500] or response.reason or "no message"
    if not isinstance(data, dict):
        return str(data)[:500]
    message = str(data.get("message") or response.reason or "no message")
    details = [e.get("message") or e.get("code") for e in data.get("errors") or [] if e]
    return f"{message}: {'; '.join(map(str, details))}" if details else message


class GitHub:
    """Calls GitHub's REST API at `api_url` (the runner's `GITHUB_API_URL`) with one token."""

    def __init__(
        self,
        token: str,
        api_url: str = DEFAULT_API_URL,
        *,
        retries: int = 3,
        backoff: float = 1.0,
        max_rate_limit_wait: float = 300.0,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ):
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        self.max_rate_limit_wait = max_rate_limit_wait
        self._sleep = sleep
        self._clock = clock
        self._retries, self._backoff = retries, backoff
        self.session = _session(retries, backoff)
        self.session.headers.update(
            {
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "Authorization": f"Bearer {token}",
                "User-Agent": USER_AGENT,
            }
        )

    def __repr__(self) -> str:  # never the token
        return f"GitHub({self.api_url!r})"

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            # Link and archive URLs are followed as given, but the token stays on the API host.
            if not path.startswith(self.api_url + "/"):
                raise GitHubError(None, "refusing to send the token off the API host", path)
            return path
        return f"{self.api_url}/{path.lstrip('/')}"

    def _rate_limit_wait(self, response: requests.Response) -> float | None:
        if response.status_code not in (403, 429):
            return None
        headers = response.headers
        if headers.get("retry-after"):
            try:
                return max(0.0, float(headers["retry-after"]))
            except ValueError:
                return SECONDARY_DEFAULT_WAIT
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            return max(0.0, float(headers["x-ratelimit-reset"]) - self._clock()) + 1.0
        if "secondary rate limit" in response.text.lower():
            return SECONDARY_DEFAULT_WAIT
        return None

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """One call; raises GitHubError for any status >= 400 (after retries and waits)."""
        url = self.url(path)
        waited = 0.0
        kwargs.setdefault("timeout", self.timeout)
        while True:
            try:
                response = self.session.request(method, url, **kwargs)
            except requests.RequestException as exc:
                raise GitHubError(None, f"{type(exc).__name__}: {exc}", url) from None
            wait = self._rate_limit_wait(response)
            if wait is None:
                break
            if waited + wait > self.max_rate_limit_wait:
                raise GitHubError(
                    response.status_code,
                    f"rate limited; waiting {wait:.0f}s more would exceed the "
                    f"{self.max_rate_limit_wait:.0f}s cap ({_error_message(response)})",
                    url,
                )
            self._sleep(wait)
            waited += wait
        if response.status_code >= 400:
            raise GitHubError(response.status_code, _error_message(response), url)
        return response

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs).json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("POST", path, json=body).json()

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("PATCH", path, json=body).json()

    def delete(self, path: str) -> None:
        self.request("DELETE", path)

    def paginate(
        self, path: str, params: dict[str, Any] | None = None, key: str | None = None
    ) -> Iterator[Any]:
        """Every item of a list endpoint, following the `Link: rel="next"` URLs as given.

        `key` names the list inside an object body (`artifacts`, `workflow_runs`)."""
        response = self.request("GET", path, params={"per_page": 100, **(params or {})})
        while True:
            data = response.json()
            yield from data[key] if key else data
            next_url = response.links.get("next", {}).get("url")
            if not next_url:
                return
            response = self.request("GET", next_url)

    def download_artifact(
        self,
        url: str,
        dest: Path,
        *,
        max_bytes: int = ARTIFACT_MAX_BYTES,
        digest: str | None = None,
    ) -> str:
        """Stream an artifact's zip to the file `dest`; returns its digest, "sha256:<hex>".

        GitHub answers 302 to blob storage, which must get no token. The bytes are never
        held in memory: the size cap is counted and the digest computed as they arrive,
        and the listed `digest` (when it is a sha256) checked at the end. On any failure
        nothing is left at `dest`: it is written whole or not at all (files.replacing)."""
        try:
            response = self.request("GET", url, allow_redirects=False, stream=True)
        except GitHubError as exc:
            if exc.status == 410:
                raise ArtifactExpired(410, exc.message, exc.url) from None
            raise
        with response, replacing(dest) as out:
            if response.is_redirect:
                actual = self._follow(response.headers["Location"], out, max_bytes, url)
            else:
                actual = _write_capped(response, out, max_bytes, url)
            if digest and digest.startswith("sha256:") and actual != digest:
                raise GitHubError(
                    None, f"artifact digest is {actual}, not the listed {digest}", url
                )
        return actual

    def _follow(self, location: str, out: Sink, max_bytes: int, url: str) -> str:
        """The redirect's body written to `out` (its digest returned), with no credentials."""
        # auth=no-op: no Authorization header, and no .netrc credentials either.
        with (
            _session(self._retries, self._backoff) as plain,
            plain.get(location, stream=True, timeout=self.timeout, auth=lambda r: r) as blob,
        ):
            if blob.status_code >= 400:
                # The signed URL carries a secret: report only its host.
                where = requests.utils.urlparse(location).netloc
                raise GitHubError(blob.status_code, _error_message(blob), f"https://{where}/…")
            return _write_capped(blob, out, max_bytes, url)


def _write_capped(response: requests.Response, out: Sink, max_bytes: int, url: str) -> str:
    """Write the body to `out`, refusing it past `max_bytes`; its sha256 digest."""
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise GitHubError(None, f"artifact is {declared} bytes, over the {max_bytes} cap", url)
    digest, size = hashlib.sha256(), 0
    for chunk in response.iter_content(chunk_size=_CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise GitHubError(None, f"artifact exceeds the {max_bytes}-byte cap", url)
        digest.update(chunk)
        out.write(chunk)
    return "sha256:" + digest.hexdigest()
