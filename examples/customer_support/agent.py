"""The customer-support agent: refunds, escalation, and a shipping sub-agent.

The model is a scripted stand-in (offline, deterministic). To run the same agent on
Gemini, set CUSTOMER_SUPPORT_MODEL, e.g. `CUSTOMER_SUPPORT_MODEL=gemini-2.5-flash`, and
GOOGLE_API_KEY (in the environment or in a `.env` file in this folder).
"""

from __future__ import annotations

import os

from google.adk.agents import LlmAgent

from .scripted_model import ScriptedSupportModel
from .tools import escalate_to_human, issue_refund, lookup_order, track_shipment

MODEL = os.environ.get("CUSTOMER_SUPPORT_MODEL") or ScriptedSupportModel()

shipping_agent = LlmAgent(
    name="shipping_agent",
    model=MODEL,
    description="Tracks parcels and tells customers when their order arrives.",
    instruction=(
        "You track parcels. Find the order number in the conversation, call "
        "track_shipment, and tell the customer when the order should arrive."
    ),
    tools=[track_shipment],
)

root_agent = LlmAgent(
    name="support_agent",
    model=MODEL,
    description="Customer support for an online shop.",
    instruction=(
        "You are the support agent of an online shop. For a refund, look the order up "
        "with lookup_order first, then refund it with issue_refund if the customer is "
        "verified and the amount is at most $500; over $500, call escalate_to_human. "
        "Hand questions about where a parcel is to shipping_agent.\n"
        "Customer tier: {tier?}\nVerified: {authenticated?}"
    ),
    tools=[lookup_order, issue_refund, escalate_to_human],
    sub_agents=[shipping_agent],
)
