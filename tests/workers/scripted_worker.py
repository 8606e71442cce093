"""A protocol worker for the command runner's tests, steered by the user's text.

The first word of each user message picks the behaviour (see `answer`); any other
text is echoed back with the session's turn history. When WORKER_LOG_DIR is set,
every message received is appended to WORKER_LOG_DIR/<pid>.jsonl.
"""

import json
import os
import subprocess
import sys
import time

LOG_DIR = os.environ.get("WORKER_LOG_DIR")
history: dict[str, list[str]] = {}  # session_id -> user texts seen so far


def log(message: dict) -> None:
    if LOG_DIR:
        with open(os.path.join(LOG_DIR, f"{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(message) + "\n")


def reply(payload) -> None:
    sys.stdout.write((payload if isinstance(payload, str) else json.dumps(payload)) + "\n")
    sys.stdout.flush()


def text_of(message: dict) -> str:
    return "".join(part.get("text", "") for part in message["user_content"]["parts"])


def model_says(text: str) -> dict:
    return {"role": "model", "parts": [{"text": text}]}


def answer(message: dict) -> None:
    rid = message["id"]
    text = text_of(message)
    word, _, rest = text.partition(" ")
    seen = history.setdefault(message["session_id"], [])
    seen.append(text)
    if word == "crash":
        print("boom: crashing on purpose", file=sys.stderr, flush=True)
        sys.exit(3)
    elif word == "garbage":
        reply("this is not json")
    elif word == "list":
        reply([1, 2])
    elif word == "wrong-id":
        reply({"id": "r-999999", "final_response": None})
    elif word == "error":
        reply({"id": rid, "error": "the model refused\nto answer"})
    elif word == "invalid":
        reply({"id": rid, "final_response": None, "tool_uses": [{"args": {}}]})
    elif word == "no-final":
        reply({"id": rid})
    elif word == "hang":
        time.sleep(3600)
    elif word == "big":
        reply({"id": rid, "final_response": model_says("x" * int(rest))})
    elif word == "env":
        reply(
            {
                "id": rid,
                "final_response": model_says(
                    json.dumps({n: os.environ.get(n) for n in rest.split()})
                ),
            }
        )
    elif word == "parent":  # the command line of the process that started this worker
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        reply({"id": rid, "final_response": model_says(json.dumps(argv))})
    elif word == "spawn-hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        log({"child_pid": child.pid})
        time.sleep(3600)
    elif word == "noisy":
        print('{"id": "' + rid + '", "final_response": null}', file=sys.stderr)
        print("a partial stderr line without newline", end="", file=sys.stderr, flush=True)
        reply({"id": rid, "final_response": model_says("quiet on stdout")})
    else:
        reply(
            {
                "id": rid,
                "final_response": model_says(text),
                "tool_uses": [
                    {"name": "echo", "args": {"turn": message["turn"], "seen": list(seen)}}
                ],
                "tool_responses": [{"name": "echo", "response": {"pid": os.getpid()}}],
                "intermediate_responses": None,
                "usage": {"prompt_tokens": len(text), "output_tokens": len(text)},
            }
        )


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        log(message)
        if message.get("type") == "end":
            history.pop(message["session_id"], None)
        else:
            answer(message)


if __name__ == "__main__":
    main()
