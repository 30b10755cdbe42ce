"""A graph whose state holds a 2 MB value, through the client, on either store.

On the DynamoDB store the value is over the item limit, so it must go to S3
and come back transparently (the service's S3 counters show it did)."""

from __future__ import annotations

import operator
import os
import re
from typing import Annotated, Any

import httpx
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import HTTPSaver

BIG = 2 * 1024 * 1024


class State(TypedDict):
    blob: bytes
    log: Annotated[list[str], operator.add]


def _graph(saver: HTTPSaver) -> Any:
    b = StateGraph(State)
    # The first node makes the 2 MB value; the second only appends to the log,
    # so the big channel is written once and then resolved from its blob.
    b.add_node("make", lambda s: {"blob": os.urandom(BIG), "log": ["made"]})
    b.add_node("use", lambda s: {"log": [f"used {len(s['blob'])}"]})
    b.add_edge(START, "make")
    b.add_edge("make", "use")
    b.add_edge("use", END)
    return b.compile(checkpointer=saver)


def _s3_puts(url: str) -> int:
    text = httpx.get(f"{url}/metrics").text
    m = re.search(r'saver_s3_requests_total\{operation="PutObject"\} (\d+)', text)
    return int(m.group(1)) if m else 0


def test_two_megabyte_state_round_trips(saver: HTTPSaver, saver_url: str, thread_id: str) -> None:
    config: Any = {"configurable": {"thread_id": thread_id}}
    puts_before = _s3_puts(saver_url)
    out = _graph(saver).invoke({"blob": b"", "log": []}, config, durability="sync")
    assert out["log"] == ["made", f"used {BIG}"]

    # A fresh saver (no client-side state) reads the same bytes back.
    with HTTPSaver(saver_url) as fresh:
        state = _graph(fresh).get_state(config)
        assert state.values["blob"] == out["blob"]
        history = list(_graph(fresh).get_state_history(config))
        assert [len(h.values.get("blob", b"")) for h in history][:2] == [BIG, BIG]

    if os.environ.get("SAVER_STORE") == "dynamodb":
        # Written once (the channel did not change in the "use" step), to S3.
        assert _s3_puts(saver_url) - puts_before >= 1
