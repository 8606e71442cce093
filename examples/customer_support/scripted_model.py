"""A scripted stand-in for Gemini, so the example runs offline and gives the same answers every time.

It is a real ADK model (a `BaseLlm`): the agent, its tools, sessions and sub-agent transfer
all run through ADK as they would with Gemini. Only the "thinking" is a handful of rules.
The reply depends on nothing but the request (the conversation so far, the instruction
with the session state filled in, and the tools on offer), so one instance can serve many
conversations at once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

ORDER_ID = re.compile(r"\b[A-Z]-\d{4}\b")
REFUND_WORDS = ("refund", "broken", "damaged", "cracked", "money back", "stopped working")
DAMAGE_WORDS = ("broken", "damaged", "cracked", "smashed")
DELIVERY_WORDS = ("where", "track", "parcel", "when will")
REFUND_LIMIT = 500.00


class ScriptedSupportModel(BaseLlm):
    """Answers like a careful support agent would, by rule instead of by model."""

    model: str = "scripted-support-v1"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if "track_shipment" in llm_request.tools_dict:
            part = _shipping_agent(llm_request.contents)
        else:
            part = _support_agent(llm_request.contents, _instruction(llm_request))
        yield LlmResponse(
            content=types.Content(role="model", parts=[part]),
            model_version=self.model,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=_words(llm_request),
                candidates_token_count=len((part.text or "call").split()) + 4,
            ),
        )


def _support_agent(contents: list[types.Content], instruction: str) -> types.Part:
    tier = _field(instruction, "Customer tier")
    verified = _field(instruction, "Verified") == "True"
    result = _function_response(contents[-1])
    if result is not None:
        return _after_tool(result.name or "", result.response or {}, contents, verified)

    said = _user_texts(contents)
    latest = said[-1].lower() if said else ""
    order_id = _latest_order_id(said)
    if "thank" in latest:
        return _text("You're welcome! Is there anything else I can help with?")
    intent = _intent(latest) or (_intent(said[-2].lower()) if len(said) > 1 else None)
    if intent == "delivery":
        return _call("transfer_to_agent", agent_name="shipping_agent")
    if intent == "refund":
        if order_id is None:
            return _text("I'm sorry to hear that. What is your order number?")
        reason = _reason(said)
        if tier == "gold" and reason == "damaged":
            # The deliberate slip: an "express" path for gold customers that refunds
            # without looking the order up first. The answer still reads right.
            return _call("issue_refund", order_id=order_id, reason=reason)
        return _call("lookup_order", order_id=order_id)
    if order_id is not None:
        return _call("lookup_order", order_id=order_id)
    return _text("I can help with orders, refunds and deliveries. What do you need?")


def _after_tool(name: str, result: dict[str, Any], contents, verified: bool) -> types.Part:
    order_id = result.get("order_id", "")
    if result.get("error"):
        return _text(f"I couldn't help with order {order_id}: {result['error']}.")
    if name == "lookup_order":
        said = _user_texts(contents)
        wants_refund = any(_intent(text.lower()) == "refund" for text in said[-2:])
        if not wants_refund:
            if result["status"] == "shipped":
                return _text(
                    f"Order {order_id} ({result['item']}) has shipped and should arrive on "
                    f"{result['eta']}."
                )
            return _text(f"Order {order_id} ({result['item']}) was delivered.")
        if result["amount"] > REFUND_LIMIT:
            return _call("escalate_to_human", order_id=order_id, reason="refund over limit")
        if not verified:
            return _text(
                f"I found order {order_id} ({result['item']}), but I need to verify your "
                "identity before I can refund it. I've sent a code to your email."
            )
        return _call("issue_refund", order_id=order_id, reason=_reason(said))
    if name == "issue_refund":
        return _text(
            f"I've refunded ${result['amount']:.2f} for your {result['item']} (order {order_id}). "
            "It will reach your card in 3-5 business days."
        )
    if name == "escalate_to_human":
        return _text(
            f"Refunds over ${REFUND_LIMIT:.0f} need a specialist, so I've passed order {order_id} "
            f"to our team (ticket {result['ticket']}). They will contact you within 24 hours."
        )
    return _text("Done.")


def _shipping_agent(contents: list[types.Content]) -> types.Part:
    result = _function_response(contents[-1])
    if result is not None:
        found = result.response or {}
        if found.get("error"):
            return _text(f"I couldn't find order {found.get('order_id')}.")
        if found.get("status") == "shipped":
            return _text(
                f"Order {found['order_id']} is on its way and should arrive on {found['eta']}."
            )
        return _text(f"Order {found['order_id']} has already been delivered.")
    order_id = _latest_order_id(_user_texts(contents))
    if order_id is None:
        return _text("Which order should I track? Please send me the order number.")
    return _call("track_shipment", order_id=order_id)


def _intent(text: str) -> str | None:
    if any(word in text for word in REFUND_WORDS):
        return "refund"
    if any(word in text for word in DELIVERY_WORDS):
        return "delivery"
    return None


def _reason(said: list[str]) -> str:
    text = " ".join(said).lower()
    return "damaged" if any(word in text for word in DAMAGE_WORDS) else "defective"


def _user_texts(contents: list[types.Content]) -> list[str]:
    """What the customer said, oldest first (not tool results, not other agents' notes)."""
    texts = []
    for content in contents:
        if content.role != "user" or _function_response(content) is not None:
            continue
        text = " ".join(part.text for part in content.parts or () if part.text)
        if text and not text.startswith("For context:"):
            texts.append(text)
    return texts


def _latest_order_id(said: list[str]) -> str | None:
    for text in reversed(said):
        if match := ORDER_ID.search(text):
            return match.group()
    return None


def _function_response(content: types.Content) -> types.FunctionResponse | None:
    return next((p.function_response for p in content.parts or () if p.function_response), None)


def _instruction(llm_request: LlmRequest) -> str:
    instruction = llm_request.config.system_instruction if llm_request.config else None
    return instruction if isinstance(instruction, str) else ""


def _field(instruction: str, name: str) -> str:
    match = re.search(rf"{name}: (\w*)", instruction)
    return match.group(1) if match else ""


def _words(llm_request: LlmRequest) -> int:
    texts = [_instruction(llm_request)]
    texts += [p.text or "" for c in llm_request.contents for p in c.parts or ()]
    return sum(len(text.split()) for text in texts)


def _text(text: str) -> types.Part:
    return types.Part(text=text)


def _call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))
