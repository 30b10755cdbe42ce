"""The resumed agent's memory, measured: four agent workflows run on the real
graph code with deterministic fake models, and the three things an agent
could be given on resume, as text.

- flat history: every message and write of every checkpoint of the thread
  (all namespaces), in time order, as `list` and `get_tuple` return them. A
  checkpoint's messages are those its channel values hold; its writes are its
  pending writes, LangGraph's control-flow channels (`branch:…`,
  `__scheduled__`, `__resume__`) left out, as the resume context leaves them.
  Also respelled as compactly as the resume context, one line per
  checkpoint.
- live messages: `live_messages(thread)`, one line per message.
- resume context: `resume_context(thread, values=True).text`.

Messages are written the same way in all three (`role: text`, tool calls as
`→ name(args)`), and the flat history names a checkpoint as the context does
(`step 3 · loop`, no ids), so the difference is what is there, not how it is
spelled.
python/tests/test_memory.py pins the invariants on these scenarios;
bench/memory.py counts their tokens with a BPE tokenizer.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from saver_client import HTTPSaver

ROOT = Path(__file__).resolve().parents[3]
HIDDEN = ("__scheduled__", "__resume__")
# The resume context's values are not cut: it must say all a message said.
VALUE_BYTES = 65536


@dataclass
class Thread:
    """A scenario's thread once run."""

    name: str
    thread_id: str
    failures: bool  # whether any attempt failed or was abandoned


def model(*replies: AIMessage) -> GenericFakeChatModel:
    """A chat model that answers with the given messages, in order."""
    return GenericFakeChatModel(messages=iter(replies))


def config_of(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


# ---- the scenarios -------------------------------------------------------------


def payment(saver: HTTPSaver) -> Thread:
    """examples/payment_workflow.py as it is: seven steps, the shipping API
    answers 429 once, the thread is resumed and finishes."""
    spec = importlib.util.spec_from_file_location("payment_workflow", ROOT / "examples" / "payment_workflow.py")
    assert spec and spec.loader
    ex = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, ex)  # its type hints are resolved through it
    spec.loader.exec_module(ex)
    thread_id = f"memory-payment-{uuid.uuid4()}"
    order_id = uuid.uuid4().hex
    with contextlib.redirect_stdout(io.StringIO()):  # the example narrates its steps
        graph = ex.build(saver, ex.PaymentAPI(), ex.ShippingAPI(), Counter())
        try:
            graph.invoke({"order_id": order_id, "amount": 4200, "log": []}, config_of(thread_id), durability="sync")
        except ex.ShippingRateLimited:
            pass
        else:
            raise AssertionError("the first run should fail at the shipping step")
        graph.invoke(None, config_of(thread_id), durability="sync")
    return Thread("payment workflow (examples/)", thread_id, failures=True)


class RateLimited(Exception):
    """The flight API answered 429."""


FLIGHTS = json.dumps(
    {
        "flights": [
            {"flight": "LH 1024", "from": "FRA", "to": "LIS", "departs": "2025-06-12T07:40", "price_eur": 189},
            {"flight": "TP 579", "from": "FRA", "to": "LIS", "departs": "2025-06-12T11:05", "price_eur": 164},
            {"flight": "FR 1683", "from": "HHN", "to": "LIS", "departs": "2025-06-12T15:30", "price_eur": 72},
        ],
        "currency": "EUR",
        "source": "flight-api v3",
    }
)


def tool_agent(saver: HTTPSaver) -> Thread:
    """agent -> tools -> agent: the flight API answers 429 twice, each time
    the run fails and the thread is resumed; the third call goes through."""
    llm = model(
        AIMessage(
            "I'll look up flights from Frankfurt to Lisbon on June 12.",
            id="ai-1",
            tool_calls=[{"name": "search_flights", "args": {"from": "FRA", "to": "LIS", "date": "2025-06-12"}, "id": "call-1"}],
        ),
        AIMessage(
            "The cheapest is FR 1683 from Hahn at 15:30 for 72 EUR; from Frankfurt itself, TP 579 at 11:05 "
            "for 164 EUR. Shall I hold a seat on one of them?",
            id="ai-2",
        ),
    )
    calls = Counter[str]()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["messages"])]}

    def tools(state: MessagesState) -> dict[str, Any]:
        calls["search_flights"] += 1
        if calls["search_flights"] <= 2:
            raise RateLimited("429 Too Many Requests: flight-api rate limit exceeded, retry after 2 s")
        call = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(FLIGHTS, tool_call_id=call["id"], id="tool-1")]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=saver)
    thread_id = f"memory-tools-{uuid.uuid4()}"
    question = [
        SystemMessage("You are a travel assistant. Use the tools; quote prices in EUR.", id="sys-1"),
        HumanMessage("Find me a flight from Frankfurt to Lisbon on June 12, cheapest first.", id="human-1"),
    ]
    inputs: Any = {"messages": question}
    for _ in range(2):
        try:
            graph.invoke(inputs, config_of(thread_id), durability="sync")
        except RateLimited:
            inputs = None
        else:
            raise AssertionError("the flight API should answer 429 twice")
    graph.invoke(None, config_of(thread_id), durability="sync")
    assert calls["search_flights"] == 3
    return Thread("tool agent, 429 retried twice", thread_id, failures=True)


def fork_after_update(saver: HTTPSaver) -> Thread:
    """writer -> reviewer. After a first review, the user goes back to the
    draft, adds an instruction with update_state, and the reviewer runs
    again: the first review is left on an abandoned branch."""
    writer_llm = model(
        AIMessage(
            "Draft: Our Q2 release cuts checkout latency by 40 % and adds Apple Pay. Existing customers "
            "need do nothing; the change rolls out region by region from June 3.",
            id="draft-1",
        )
    )
    reviewer_llm = model(
        AIMessage(
            "Review: clear and short. Say which regions go first, and link the status page for the rollout.",
            id="review-1",
        ),
        AIMessage(
            "Review: now addressed to developers, with the API change first. Add the SDK versions that "
            "support Apple Pay and a migration note for custom checkouts.",
            id="review-2",
        ),
    )

    def writer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [writer_llm.invoke(state["messages"])]}

    def reviewer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [reviewer_llm.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("writer", writer)
    g.add_node("reviewer", reviewer)
    g.add_edge(START, "writer")
    g.add_edge("writer", "reviewer")
    g.add_edge("reviewer", END)
    graph = g.compile(checkpointer=saver)
    thread_id = f"memory-fork-{uuid.uuid4()}"
    config = config_of(thread_id)
    graph.invoke({"messages": [HumanMessage("Write the release note for the Q2 checkout changes.", id="human-1")]}, config)
    after_writer = next(s for s in graph.get_state_history(config) if s.next == ("reviewer",))
    edited = graph.update_state(
        after_writer.config,
        {"messages": [HumanMessage("Address it to developers, not shoppers.", id="human-2")]},
        as_node="writer",
    )
    graph.invoke(None, edited)
    return Thread("fork after update_state", thread_id, failures=True)


def subgraph(saver: HTTPSaver) -> Thread:
    """plan -> research (a subgraph: search -> summarize) -> answer, on one
    messages channel; nothing fails."""
    llm = model(
        AIMessage("Plan: find the current EU rules on battery passports, then summarise the deadlines.", id="plan-1"),
        AIMessage(
            "Search results: Regulation (EU) 2023/1542 requires a digital battery passport for EV and "
            "industrial batteries over 2 kWh from 18 February 2027; the QR code must link to the passport.",
            id="search-1",
        ),
        AIMessage("Summary: battery passports are due from 18 February 2027, for EV and industrial batteries over 2 kWh.", id="sum-1"),
        AIMessage(
            "Answer: from 18 February 2027, EV and industrial batteries over 2 kWh sold in the EU need a digital "
            "passport reachable by QR code (Regulation (EU) 2023/1542).",
            id="answer-1",
        ),
    )

    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["messages"])]}

    sub = StateGraph(MessagesState)
    sub.add_node("search", node)
    sub.add_node("summarize", node)
    sub.add_edge(START, "search")
    sub.add_edge("search", "summarize")
    sub.add_edge("summarize", END)

    g = StateGraph(MessagesState)
    g.add_node("plan", node)
    g.add_node("research", sub.compile())
    g.add_node("answer", node)
    g.add_edge(START, "plan")
    g.add_edge("plan", "research")
    g.add_edge("research", "answer")
    g.add_edge("answer", END)
    graph = g.compile(checkpointer=saver)
    thread_id = f"memory-subgraph-{uuid.uuid4()}"
    graph.invoke({"messages": [HumanMessage("When do EU battery passports become mandatory?", id="human-1")]}, config_of(thread_id))
    return Thread("subgraph", thread_id, failures=False)


SCENARIOS: tuple[Callable[[HTTPSaver], Thread], ...] = (payment, tool_agent, fork_after_update, subgraph)


# ---- the three texts -------------------------------------------------------------


def message_line(m: BaseMessage) -> str:
    """A message as all three texts write it."""
    text = m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False)
    calls = "".join(
        f" → {c['name']}({json.dumps(c['args'], ensure_ascii=False, separators=(',', ':'))})"
        for c in getattr(m, "tool_calls", None) or []
    )
    return f"{m.type}: {text}{calls}"


def messages_in(value: Any) -> list[BaseMessage]:
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, list | tuple):
        return [m for m in value if isinstance(m, BaseMessage)]
    return []


def value_text(value: Any) -> str:
    ms = messages_in(value)
    if ms:
        return " | ".join(message_line(m) for m in ms)
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def hidden(channel: str) -> bool:
    return channel.startswith("branch:") or channel in HIDDEN


@dataclass
class Flat:
    """The flat history: its text, and its messages in the order they appear.

    `respelled` is the same history spelled as compactly as the resume
    context: one line per checkpoint, the source only when it is not
    "loop", a channel's messages joined on one line. What it leaves out
    against the context is what the context leaves out, not spelling.
    """

    text: str
    messages: list[BaseMessage]
    respelled: str


def flat_history(saver: HTTPSaver, thread_id: str) -> Flat:
    """Every message and write of every checkpoint of the thread, in time
    order (checkpoint ids are time-ordered uuid6), every namespace."""
    listed = list(saver.list(config_of(thread_id)))
    listed.sort(key=lambda t: t.config["configurable"]["checkpoint_id"])
    lines: list[str] = []
    respelled: list[str] = []
    seen: list[BaseMessage] = []
    for item in listed:
        tup = saver.get_tuple(item.config)
        assert tup is not None
        conf, md = tup.config["configurable"], tup.metadata or {}
        ns = conf.get("checkpoint_ns") or ""
        where = f" · {ns.split(':')[0]}" if ns else ""
        lines.append(f"step {md.get('step')} · {md.get('source')}{where}")
        source = "" if md.get("source") == "loop" else f" · {md.get('source')}"
        parts: list[str] = []
        for channel, value in sorted(tup.checkpoint["channel_values"].items()):
            ms = messages_in(value)
            for m in ms:
                lines.append(f"  {channel}: {message_line(m)}")
                seen.append(m)
            if ms:
                parts.append(f"{channel}: " + " | ".join(message_line(m) for m in ms))
        for _task_id, channel, value in tup.pending_writes or []:
            if hidden(channel):
                continue
            lines.append(f"  wrote {channel}: {value_text(value)}")
            parts.append(f"wrote {channel}: {value_text(value)}")
            seen.extend(messages_in(value))
        respelled.append(f"step {md.get('step')}{source}{where}" + (": " + "; ".join(parts) if parts else ""))
    return Flat("\n".join(lines) + "\n", seen, "\n".join(respelled) + "\n")


def live_text(messages: Iterable[BaseMessage]) -> str:
    return "".join(message_line(m) + "\n" for m in messages)


def dedup(messages: Iterable[BaseMessage]) -> list[BaseMessage]:
    """Messages de-duplicated by id: each id once, where it first appears,
    holding its last version (as add_messages keeps a replaced message)."""
    order: list[str] = []
    last: dict[str, BaseMessage] = {}
    for m in messages:
        assert m.id, f"a stored message without an id: {m!r}"
        if m.id not in last:
            order.append(m.id)
        last[m.id] = m
    return [last[i] for i in order]


@dataclass
class Texts:
    flat: Flat
    live: list[BaseMessage]
    context: Any  # saver_client.ResumeContext


def texts(saver: HTTPSaver, thread: Thread) -> Texts:
    return Texts(
        flat=flat_history(saver, thread.thread_id),
        live=saver.live_messages(thread.thread_id),
        context=saver.resume_context(thread.thread_id, values=True, value_bytes=VALUE_BYTES),
    )
