"""A customer-support agent for an online shop that speaks agent-eval-action's command protocol.

Run it with:  agent-eval-action run examples/evals --command "python examples/agent/support_agent.py"

The protocol: one JSON object per line. For each user turn a request arrives on stdin,

    {"protocol": 1, "id": "r-1", "session_id": "support.refund.run1", "turn": 0,
     "session_input": {"app_name": "support_agent", "user_id": "u-1", "state": {}} or null,
     "user_content": {"role": "user", "parts": [{"text": "My blender arrived broken."}]}, ...}

and exactly one line answers it on stdout (everything but "id" and "final_response" is optional):

    {"id": "r-1", "final_response": {"role": "model", "parts": [{"text": "..."}]},
     "tool_uses": [{"name": "lookup_order", "args": {"order_id": "A-4471"}}],
     "tool_responses": [{"name": "lookup_order", "response": {...}}], "usage": {...}}

or {"id": "r-1", "error": "what went wrong"}. After a conversation's last turn comes
{"protocol": 1, "type": "end", "session_id": ...}, which needs no answer. One process serves
many conversations, one request at a time, so state is kept per session_id. Logs go to
stderr: stdout carries answers only.

This agent has no model and no network: its "reasoning" is a few keyword rules and its tools
are simulated in-process, so it is deterministic. To adapt the file to your own agent, keep
`main()` and replace `respond()` with one turn of your framework in the session for
`session_id`, recording the tool calls it made and its final text.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

# ---- The shop's back office, simulated -------------------------------------------------

ORDERS: dict[str, dict[str, Any]] = {
    "A-2208": {"item": "desk lamp", "status": "processing", "price": 34.50},
    "A-3090": {"item": "coffee grinder", "status": "delivered", "price": 89.00},
    "A-4471": {"item": "blender", "status": "delivered", "price": 49.99},
    "A-5120": {"item": "wireless headphones", "status": "shipped", "price": 129.00},
}
SHIPMENTS = {"A-5120": {"carrier": "ParcelPost", "last_scan": "Leeds", "eta": "Friday"}}
FAQ = {
    "returns": "You can return any item within 30 days of delivery for a full refund.",
    "shipping": "Standard shipping takes 3 to 5 business days.",
    "warranty": "Every appliance comes with a two-year warranty.",
}


def lookup_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    return {"order_id": order_id, **order} if order else {"error": "order not found"}


def issue_refund(order_id: str, reason: str) -> dict[str, Any]:
    refund_id = "RF-" + order_id.split("-")[1]
    return {"refund_id": refund_id, "amount": ORDERS[order_id]["price"], "reason": reason}


def track_shipment(order_id: str) -> dict[str, Any]:
    return SHIPMENTS.get(order_id, {"error": "no shipment yet"})


def search_faq(topic: str) -> dict[str, Any]:
    return {"topic": topic, "answer": FAQ[topic]}


TOOLS = {f.__name__: f for f in (lookup_order, issue_refund, track_shipment, search_faq)}

# ---- The agent ------------------------------------------------------------------------

ORDER_ID = re.compile(r"\b[A-Z]-\d{4}\b")
FAQ_TOPICS = {"return policy": "returns", "shipping take": "shipping", "warranty": "warranty"}


@dataclass
class Session:
    """What the agent remembers within one conversation."""

    tier: str = "standard"
    order_id: str | None = None  # the order this conversation is about
    verified: set[str] = field(default_factory=set)  # orders already looked up
    damaged: bool = False  # the customer said the item arrived broken


@dataclass
class Turn:
    """The tool calls of one turn, in the order they were made."""

    tool_uses: list[dict[str, Any]] = field(default_factory=list)
    tool_responses: list[dict[str, Any]] = field(default_factory=list)

    def call(self, name: str, **args: Any) -> dict[str, Any]:
        result = TOOLS[name](**args)
        self.tool_uses.append({"name": name, "args": args})
        self.tool_responses.append({"name": name, "response": result})
        return result


def respond(session: Session, text: str, turn: Turn) -> str:
    """One turn of the conversation: update the session, call tools, return the answer."""
    lowered = text.lower()
    if match := ORDER_ID.search(text):
        session.order_id = match.group()
    if any(word in lowered for word in ("broken", "damaged", "cracked")):
        session.damaged = True

    for phrase, topic in FAQ_TOPICS.items():
        if phrase in lowered:
            return turn.call("search_faq", topic=topic)["answer"]

    order_id = session.order_id
    if order_id is None:
        if session.damaged:
            return "I'm sorry it arrived damaged. What is your order number? It looks like A-1234."
        return "I can help with orders, refunds, shipping and our policies. What do you need?"

    if "refund" in lowered:
        # Gold customers get an express refund. (This shortcut skips verifying the order:
        # the "gold_express_refund" eval case catches it.)
        if order_id not in session.verified and session.tier != "gold":
            if "error" in turn.call("lookup_order", order_id=order_id):
                return f"I couldn't find order {order_id}. Could you check the number?"
            session.verified.add(order_id)
        reason = "damaged" if session.damaged else "customer request"
        refund = turn.call("issue_refund", order_id=order_id, reason=reason)
        return (
            f"Done: I've refunded ${refund['amount']:.2f} for order {order_id} "
            f"(refund {refund['refund_id']}). You'll see it within 5 business days."
        )

    if any(word in lowered for word in ("where", "track", "arrive")) and not session.damaged:
        shipment = turn.call("track_shipment", order_id=order_id)
        if "error" in shipment:
            return f"Order {order_id} hasn't shipped yet."
        return (
            f"Order {order_id} is with {shipment['carrier']}, last scanned in "
            f"{shipment['last_scan']}, and should arrive on {shipment['eta']}."
        )

    order = turn.call("lookup_order", order_id=order_id)
    if "error" in order:
        return f"I couldn't find order {order_id}. Could you check the number?"
    session.verified.add(order_id)
    if session.damaged:
        return f"Thanks. Order {order_id} ({order['item']}) was delivered. Would you like a refund?"
    if order["status"] == "processing":
        return (
            f"Order {order_id} ({order['item']}) is being prepared and will ship within two days."
        )
    return f"I found order {order_id}: {order['item']}, {order['status']}. How can I help with it?"


# ---- The protocol ---------------------------------------------------------------------


def handle(request: dict[str, Any], sessions: dict[str, Session]) -> dict[str, Any]:
    """Answer one turn request."""
    session_id = request["session_id"]
    if session_id not in sessions:
        state = (request.get("session_input") or {}).get("state", {})
        sessions[session_id] = Session(tier=state.get("tier", "standard"))
    text = "".join(part.get("text", "") for part in request["user_content"]["parts"])

    turn = Turn()
    reply = respond(sessions[session_id], text, turn)
    log(f"{session_id} turn {request['turn']}: {[use['name'] for use in turn.tool_uses]}")
    return {
        "id": request["id"],
        "final_response": {"role": "model", "parts": [{"text": reply}]},
        "tool_uses": turn.tool_uses,
        "tool_responses": turn.tool_responses,
        # A real agent reports its model's token counts here (they appear in the report).
        "usage": {
            "prompt_tokens": 200 + 2 * len(text.split()),
            "output_tokens": len(reply.split()),
        },
    }


def log(message: str) -> None:
    print(f"support_agent: {message}", file=sys.stderr, flush=True)


def main() -> None:
    answers = sys.stdout
    sys.stdout = sys.stderr  # a stray print() anywhere else goes to the log, not the protocol
    sessions: dict[str, Session] = {}
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("type") == "end":
            sessions.pop(request["session_id"], None)
            continue
        try:
            answer = handle(request, sessions)
        except Exception as exc:  # report the failure for this turn and keep serving
            traceback.print_exc()
            answer = {"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
