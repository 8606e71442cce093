"""The library assistant: a LangGraph graph in which a chat model and the tools take turns.

    START -> model --(the model asked for tools)--> tools -> model -> ... --(an answer)--> END

This is LangGraph's usual tool-calling loop, built by hand so that every part is visible:
`MessagesState` holds the conversation, `ToolNode` runs the tool calls of the model's last
message, and `tools_condition` ends the turn once the model answers without calling a tool.
Any chat model with tool calling fits here: this example passes `ScriptedLibrarian`, which
answers by rule so that the evals run offline.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from tools import TOOLS


def build_graph(model: BaseChatModel, checkpointer: BaseCheckpointSaver) -> CompiledStateGraph:
    """The compiled graph; `checkpointer` keeps each conversation (thread) between turns."""
    with_tools = model.bind_tools(TOOLS)

    def call_model(state: MessagesState) -> dict:
        return {"messages": [with_tools.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)  # to "tools", or to END
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer)
