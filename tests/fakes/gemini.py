"""A fake Gemini API on 127.0.0.1, for tests and demos of the LLM judge.

It serves `POST /{v1,v1beta}/models/{model}:generateContent` (any path prefix) with
the response shapes the real API returns, so the real google-genai client talks to
it over HTTP (point it here with `http_options.base_url` or GOOGLE_GEMINI_BASE_URL).

Each request is classified by the judge prompt it carries (`kind_of`), and answered
from a per-kind script of queued replies, else by a default judge that finds every
answer right: "valid", "yes" for each rubric, "supported" for each sentence, "safe".

    with FakeGemini() as fake:
        fake.script("verdict", verdict("valid"), verdict("invalid"), error(503))
        ...  # run the judge with base_url=fake.url
        assert fake.calls("verdict") == 3

Run it alone for a manual demo: `python tests/fakes/gemini.py --port 8765`.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KINDS = ("labels", "sentences", "rubrics", "verdict", "safety", "coherence", "user", "user_turn")
STOP_SIGNAL = "</finished>"
_ROUTE = re.compile(r"/(v1\w*)/models/([^/:]+):(generateContent|streamGenerateContent)$")
_RUBRIC_LINE = re.compile(r"^\s*[-*]\s*\[id: ([^\]]+)\]\s*(.*)$", re.M)
_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.S)


def kind_of(prompt: str) -> str | None:
    """Which judge prompt this is, from markers our prompt templates carry ("user": the
    user simulator's prompt)."""
    if "You play the user in a conversation" in prompt:
        return "user"
    if "You review a simulated user" in prompt:
        return "user_turn"
    if "supporting_excerpt:" in prompt:
        return "labels"
    if "<sentence>" in prompt and "RESPONSE TO SPLIT" in prompt:
        return "sentences"
    if "[id: " in prompt and "Verdict:" in prompt:
        return "rubrics"
    if "is_the_agent_response_valid" in prompt:
        return "verdict"
    if '"harmless"' in prompt:
        return "safety"
    if "You rate how coherent" in prompt:
        return "coherence"
    return None


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0


Responder = Callable[[str], "Reply | str"]


def usage(prompt_tokens: int, output_tokens: int, thinking_tokens: int = 0) -> dict[str, int]:
    return {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "thoughtsTokenCount": thinking_tokens,
        "totalTokenCount": prompt_tokens + output_tokens + thinking_tokens,
    }


def text(answer: str, finish_reason: str = "STOP") -> Reply:
    return Reply(
        body={
            "candidates": [
                {
                    "content": {"parts": [{"text": answer}], "role": "model"},
                    "finishReason": finish_reason,
                    "index": 0,
                }
            ]
        }
    )


def verdict(label: str) -> Reply:
    return text(json.dumps({"reasoning": "compared", "is_the_agent_response_valid": label}))


def safety(label: str) -> Reply:
    return text(json.dumps({"reasoning": "checked", "verdict": label}))


def rubric_block(rubric_id: str, prop: str, answer: str) -> str:
    return f"ID: {rubric_id}\nProperty: {prop}\nRationale: looked at it\nVerdict: {answer}\n"


def blocked(reason: str = "SAFETY") -> Reply:
    """The model stopped without text (finishReason SAFETY and the like)."""
    return Reply(body={"candidates": [{"finishReason": reason, "index": 0}]})


def empty() -> Reply:
    """The prompt itself was blocked: no candidates at all."""
    return Reply(body={"promptFeedback": {"blockReason": "SAFETY"}})


def error(code: int) -> Reply:
    status = {
        400: "INVALID_ARGUMENT",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }.get(code, "UNKNOWN")
    message = {
        429: "Resource has been exhausted (e.g. check quota).",
        503: "The model is overloaded. Please try again later.",
    }.get(code, "fake error")
    return Reply(status=code, body={"error": {"code": code, "message": message, "status": status}})


def default_answer(kind: str | None, prompt: str) -> str:
    """A judge that finds everything right; a simulated user who is done at once."""
    if kind == "user":
        return STOP_SIGNAL
    if kind == "user_turn":
        return json.dumps({"reasoning": "follows the plan", "is_valid": True})
    if kind == "verdict":
        return json.dumps({"reasoning": "same facts", "is_the_agent_response_valid": "valid"})
    if kind == "safety":
        return json.dumps({"reasoning": "harmless", "verdict": "safe"})
    if kind == "coherence":
        return json.dumps({"reasoning": "clear", "coherence": 5})
    if kind == "rubrics":
        return "\n".join(rubric_block(i, p.strip(), "yes") for i, p in _RUBRIC_LINE.findall(prompt))
    if kind == "sentences":
        response = prompt.split("<<<RESPONSE TO SPLIT>>>")[-1].split("<<<END RESPONSE>>>")[0]
        parts = [s.strip() for s in re.split(r"(?<=[.!?])\s+", response.strip()) if s.strip()]
        return "\n".join(f"<sentence>{s}</sentence>" for s in parts)
    if kind == "labels":
        listed = prompt.split("<<<SENTENCES>>>")[-1]
        return "\n".join(
            f"sentence: {s}\nlabel: supported\nrationale: in the context\n"
            f"supporting_excerpt: {s}\ncontradicting_excerpt: null"
            for s in _SENTENCE.findall(listed)
        )
    return "I do not know this prompt."


@dataclass
class Recorded:
    path: str
    api_version: str
    model: str
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: str
    kind: str | None
    status: int


class FakeGemini:
    def __init__(self, latency_s: float = 0.0, port: int = 0):
        self.latency_s = latency_s
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: dict[str | None, collections.deque[Reply | str | Responder]] = (
            collections.defaultdict(collections.deque)
        )
        self._responders: dict[str | None, Responder] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeGemini:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, kind: str | None, *replies: Reply | str | Responder) -> None:
        """Queue replies for the next requests of this kind (a str is the judge's text)."""
        with self._lock:
            self._script[kind].extend(replies)

    def respond(self, kind: str | None, responder: Responder) -> None:
        """Answer every request of this kind (once its script is used up) with responder(prompt)."""
        with self._lock:
            self._responders[kind] = responder

    def calls(self, kind: str | None = "*") -> int:
        """HTTP requests received (retries included), of one kind or all."""
        return sum(1 for r in self.requests if kind == "*" or r.kind == kind)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self._responders.clear()
            self.max_in_flight = 0

    def _answer(self, kind: str | None, prompt: str) -> Reply:
        with self._lock:
            queue = self._script.get(kind)
            responder = self._responders.get(kind)
            if queue:
                reply = queue.popleft()
            elif responder is not None:
                reply = responder
            else:
                reply = default_answer(kind, prompt)
        if callable(reply) and not isinstance(reply, Reply):
            reply = reply(prompt)
        return text(reply) if isinstance(reply, str) else reply


def _handler(fake: FakeGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else each keep-alive reply waits ~40 ms for an ACK

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            route = _ROUTE.search(self.path.split("?")[0])
            try:
                body = json.loads(raw or b"null")
            except json.JSONDecodeError:
                body = None
            if route is None or not isinstance(body, dict):
                self._send(
                    404, {"error": {"code": 404, "message": "no such route", "status": "NOT_FOUND"}}
                )
                return
            prompt = "".join(
                part.get("text") or ""
                for content in body.get("contents") or ()
                for part in content.get("parts") or ()
            )
            kind = kind_of(prompt)
            with fake._lock:
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            try:
                reply = fake._answer(kind, prompt)
                time.sleep(fake.latency_s + reply.delay_s)
                payload = dict(reply.body)
                if reply.status == 200:
                    out = sum(
                        len(p.get("text", ""))
                        for c in payload.get("candidates", [])
                        for p in (c.get("content") or {}).get("parts", [])
                    )
                    payload.setdefault(
                        "usageMetadata", usage(len(prompt) // 4 + 1, out // 4 + 1, 7)
                    )
                    payload.setdefault("modelVersion", route.group(2))
                    payload.setdefault("responseId", f"fake-{len(fake.requests) + 1}")
                with fake._lock:
                    fake.requests.append(
                        Recorded(
                            self.path,
                            route.group(1),
                            route.group(2),
                            dict(self.headers),
                            body,
                            prompt,
                            kind,
                            reply.status,
                        )
                    )
                self._send(reply.status, payload)
            finally:
                with fake._lock:
                    fake.in_flight -= 1

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Serve a fake Gemini API that approves everything."
    )
    parser.add_argument("--port", type=int, default=8765)
    port = parser.parse_args().port
    fake = FakeGemini(port=port).start()
    print(
        f"fake Gemini at {fake.url}  (GOOGLE_GEMINI_BASE_URL={fake.url} GOOGLE_API_KEY=fake)",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
