"""Writes serialized.json: values as LangGraph's serializer writes them, for
valueview's tests. Run with the Python of the client's venv:

    python valueview/testdata/gen.py > valueview/testdata/serialized.json
"""

import base64
import dataclasses
import datetime
import enum
import json
import uuid
from collections import deque
from typing import NamedTuple

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Send
from pydantic import BaseModel


@dataclasses.dataclass
class Order:
    id: int
    items: list


class Point(NamedTuple):
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"


class Profile(BaseModel):
    name: str
    tags: set


values = {
    "none": None,
    "bytes": b"\x00\x01\x02",
    "int": 42,
    "negative": -7,
    "big": 2**64 - 1,
    "float": 1.5,
    "str": "héllo \"quoted\"\n",
    "list": [1, "two", None, True],
    "dict": {"a": 1, "b": [1, 2]},
    "int_keys": {1: "one", 2: "two"},
    "tuple": (1, 2),
    "set": {3},
    "frozenset": frozenset(["x"]),
    "deque": deque([1, 2]),
    "datetime": datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc),
    "date": datetime.date(2024, 5, 1),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "enum": Color.RED,
    "dataclass": Order(7, ["tea"]),
    "namedtuple": Point(1, 2),
    "pydantic": Profile(name="ada", tags={"x"}),
    "send": Send("work", {"x": 1}),
    "human": HumanMessage("What is 2+2?", id="h1"),
    "ai_tool_call": AIMessage(
        "", id="a1", tool_calls=[{"name": "calc", "args": {"expr": "2+2"}, "id": "c1"}]
    ),
    "tool": ToolMessage("4", tool_call_id="c1", id="t1"),
    "messages": [SystemMessage("Be brief.", id="s1"), AIMessage([{"type": "text", "text": "It is 4."}], id="a2")],
    "remove": RemoveMessage(id="a1"),
    "nested": {"state": {"messages": [HumanMessage("hi", id="h2")], "count": 1}},
}

out = []
for name, value in values.items():
    typ, data = JsonPlusSerializer().dumps_typed(value)
    out.append({"name": name, "type": typ, "data": base64.b64encode(data).decode()})
print(json.dumps(out, indent=1))
