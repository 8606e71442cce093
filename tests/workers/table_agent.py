"""A test agent whose answers come from a JSON table.

Usage: table_agent.py TABLE.json. Keys are tried from the most specific down:
"<eval_id>/<turn>/<run>", "<eval_id>/<turn>", "<eval_id>". A value is an answer:
{"text": ..., "tools": [[name, args], ...], "responses": [[name, response], ...]} (the
responses: what the tools answered, optional; "thought": a thought part before the
text, optional), or {"error": ...}, or {"sleep": s},
or {"exit": code} to crash.
"""

import json
import sys
import time


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        table = json.load(f)
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("type") == "end":
            continue
        eval_id, turn, run = request["eval_id"], request["turn"], request["run"]
        entry = next(
            (
                table[k]
                for k in (f"{eval_id}/{turn}/{run}", f"{eval_id}/{turn}", eval_id)
                if k in table
            ),
            {"text": ""},
        )
        if "sleep" in entry:
            time.sleep(entry["sleep"])
        if "exit" in entry:
            sys.exit(entry["exit"])
        if "error" in entry:
            print(json.dumps({"id": request["id"], "error": entry["error"]}), flush=True)
            continue
        answer = {
            "id": request["id"],
            "final_response": {
                "role": "model",
                "parts": (
                    [{"text": entry["thought"], "thought": True}] if "thought" in entry else []
                )
                + [{"text": entry.get("text", "")}],
            },
            "tool_uses": [{"name": name, "args": args} for name, args in entry.get("tools", [])],
            "tool_responses": [
                {"name": name, "response": response}
                for name, response in entry.get("responses", [])
            ],
            "usage": {"prompt_tokens": 10, "output_tokens": 2},
        }
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
