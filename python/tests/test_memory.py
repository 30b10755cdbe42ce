"""The invariants behind the memory benchmark (bench/memory.py), on its own
scenarios (support/memory.py): the payment workflow, a tool agent whose tool
answers 429 twice, a fork after update_state, and a subgraph. Tokens here are
whitespace-separated words (the BPE tokenizer lives in the bench's venv):
the invariants do not depend on how text is cut into tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from langchain_core.messages import BaseMessage

from saver_client import HTTPSaver
from support import memory as mem


def words(text: str) -> int:
    return len(text.split())


# How a step's status reads in the context: a failed attempt reads as the
# error it was, then what happened next.
PHRASES = {"retried": "error, retried", "resumed": "interrupted, resumed"}


def step_head(step: int, source: str, status: str) -> str:
    """A step's line up to its tasks: the source and status only where they
    say something."""
    head = f"step {step}"
    if source != "loop":
        head += f" · {source}"
    if status != "ok":
        head += f" · {PHRASES.get(status, status)}"
    return head


def key(m: BaseMessage) -> tuple[str, str | None, str]:
    return (m.type, m.id, mem.message_line(m))


def context_messages(ctx: object) -> list[tuple[str, str | None, str]]:
    """The messages the resume context's steps hold, in order, as (role, id, text)."""
    return [
        (m["role"], m.get("id") or None, m["text"])
        for s in ctx.steps  # type: ignore[attr-defined]
        for t in s["tasks"]
        for w in t["writes"]
        for m in w.get("messages") or []
    ]


@pytest.mark.parametrize("scenario", mem.SCENARIOS, ids=lambda s: s.__name__)
def test_every_live_path_step_is_in_the_context(saver: HTTPSaver, scenario: Callable[[HTTPSaver], mem.Thread]) -> None:
    thread = scenario(saver)
    t = mem.texts(saver, thread)
    path = saver.path(thread.thread_id)
    assert [s["checkpoint_id"] for s in t.context.steps] == [n.checkpoint_id for n in path]
    # One line per step, in order, with what ran from it: every node that
    # wrote something on the live path is named on its step's line.
    lines = [line for line in t.context.text.splitlines() if line.startswith("step ")]
    assert len(lines) == len(path)
    for line, n, step in zip(lines, path, t.context.steps, strict=True):
        head = step_head(n.step, n.source, n.status)
        ran = [task["node"] for task in step["tasks"]]
        assert line == head if not ran else line.startswith(head + ": "), (line, head)
        at = len(head)
        for node in ran:
            at = line.index(f" {node} ", at) + len(node) + 1
    assert any(step["tasks"] for step in t.context.steps)
    if scenario is mem.tool_agent:  # what the agent asked for, too
        assert ' → search_flights({"from":"FRA","to":"LIS","date":"2025-06-12"})' in t.context.text
    # A conversation's context is the smaller text: the flat history repeats
    # the messages at every checkpoint. (A thread without messages has no
    # such repeats: its context, which names the nodes, can be the larger.)
    if t.flat.messages:
        assert words(t.context.text) < words(t.flat.text)
        # Not by spelling: the same history spelled as compactly is larger.
        assert words(t.context.text) < words(t.flat.respelled)
        assert words(mem.live_text(t.live)) < words(t.flat.text)


@pytest.mark.parametrize("scenario", [mem.tool_agent, mem.fork_after_update], ids=lambda s: s.__name__)
def test_nothing_only_on_an_abandoned_branch_is_live(saver: HTTPSaver, scenario: Callable[[HTTPSaver], mem.Thread]) -> None:
    thread = scenario(saver)
    t = mem.texts(saver, thread)
    tree = saver.tree(thread.thread_id)
    # What the live path's checkpoints hold, against what the abandoned
    # ones hold or had written to them.
    live_ids = {n.checkpoint_id for n in tree.live_path}
    live_state: set[str] = set()
    abandoned: set[str] = set()
    for n in tree.nodes:
        tup = saver.get_tuple({"configurable": {"thread_id": thread.thread_id, "checkpoint_ns": n.checkpoint_ns, "checkpoint_id": n.checkpoint_id}})
        assert tup is not None
        held = {m.id for v in tup.checkpoint["channel_values"].values() for m in mem.messages_in(v)}
        if n.checkpoint_id in live_ids:
            live_state |= held
        else:
            abandoned |= held | {m.id for _, _, v in tup.pending_writes or [] for m in mem.messages_in(v)}
    only_abandoned = abandoned - live_state
    if scenario is mem.fork_after_update:
        assert only_abandoned == {"review-1"}  # the first review, before the update
    assert not only_abandoned & {m.id for m in t.live}
    for m in t.flat.messages:
        if m.id in only_abandoned:
            assert mem.message_line(m) not in mem.live_text(t.live)


def test_a_thread_without_failures_is_its_flat_history_less_duplicates(saver: HTTPSaver) -> None:
    """Equal, for messages: the same messages (role, id and text), in the
    order they first appear, each id once."""
    thread = mem.subgraph(saver)
    assert not thread.failures
    t = mem.texts(saver, thread)
    assert not saver.abandoned(thread.thread_id)
    assert all(n.status == "ok" for n in saver.tree(thread.thread_id).nodes)
    flat = [key(m) for m in mem.dedup(t.flat.messages)]
    assert len(t.flat.messages) > len(flat)  # the flat history repeats itself
    assert [key(m) for m in t.live] == flat
    # The structured context keeps every write whole, so the subgraph's
    # return repeats what it was given; its first showing of each message
    # is the flat history's, in order.
    ctx = context_messages(t.context)
    assert len(ctx) > len(flat)
    seen: dict[str | None, tuple[str, str | None, str]] = {}
    for m in ctx:
        seen.setdefault(m[1], m)
    assert [(r, i, f"{r}: {text}") for r, i, text in seen.values()] == flat
    # The text shows each message once: the flat history's messages, less
    # duplicates, each exactly once and in order, and no other message.
    text, at = t.context.text, 0
    for _, _, line in flat:
        assert text.count(line) == 1, line
        found = text.index(line)
        assert found >= at, f"{line!r} out of order"
        text, at = text[:found] + "\0" + text[found + len(line) :], found + 1
    rest = re.sub(r" \| ", "\n", text.replace("\0", ""))
    assert not re.search(r"(^|: )(human|ai|system|tool): ", rest, re.M), rest
