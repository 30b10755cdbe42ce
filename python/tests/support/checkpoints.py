"""Checkpoints, configs and metadata made by hand, shaped as LangGraph makes them."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6


def checkpoint(
    values: dict[str, Any] | None = None,
    versions: dict[str, Any] | None = None,
    **extra: Any,
) -> Checkpoint:
    values = values or {}
    cp: dict[str, Any] = {
        "v": 4,
        "id": str(uuid6(clock_seq=-1)),
        "ts": datetime.now(timezone.utc).isoformat(),
        "channel_values": values,
        "channel_versions": versions if versions is not None else {k: 1 for k in values},
        "versions_seen": {},
        "updated_channels": None,
        **extra,
    }
    return cp  # type: ignore[return-value]


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def meta(step: int = 0, **extra: Any) -> CheckpointMetadata:
    return {"source": "loop", "step": step, "parents": {}, **extra}  # type: ignore[typeddict-item]
