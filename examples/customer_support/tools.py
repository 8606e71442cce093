"""The agent's tools, over a small in-memory order book (no network, no state between calls)."""

from __future__ import annotations

from google.adk.tools import ToolContext

ORDERS = {
    "A-4471": {"item": "Blender Pro", "amount": 89.00, "status": "delivered", "eta": None},
    "A-3090": {"item": "Steel Kettle", "amount": 45.50, "status": "delivered", "eta": None},
    "A-9001": {"item": "OLED TV 65in", "amount": 1249.00, "status": "delivered", "eta": None},
    "A-5120": {"item": "Hiking Boots", "amount": 129.00, "status": "shipped", "eta": "Thursday"},
}
REFUND_LIMIT = 500.00  # larger refunds need a human


def lookup_order(order_id: str) -> dict:
    """Looks up an order by its id (like A-4471): item, amount, delivery status."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"order_id": order_id, "error": "no such order"}
    return {"order_id": order_id, **order}


def issue_refund(order_id: str, reason: str, tool_context: ToolContext) -> dict:
    """Refunds an order in full. Only for verified customers and amounts up to the limit."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"order_id": order_id, "error": "no such order"}
    if not tool_context.state.get("authenticated"):
        return {"order_id": order_id, "error": "customer is not verified"}
    if order["amount"] > REFUND_LIMIT:
        return {"order_id": order_id, "error": "amount is over the refund limit"}
    return {
        "order_id": order_id,
        "status": "refunded",
        "item": order["item"],
        "amount": order["amount"],
        "reason": reason,
    }


def escalate_to_human(order_id: str, reason: str) -> dict:
    """Hands the case to a human specialist; returns the ticket id."""
    return {"ticket": "ESC-" + order_id.split("-")[-1], "order_id": order_id, "reason": reason}


def track_shipment(order_id: str) -> dict:
    """Where a shipped order is and when it should arrive."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"order_id": order_id, "error": "no such order"}
    return {"order_id": order_id, "status": order["status"], "eta": order["eta"]}
