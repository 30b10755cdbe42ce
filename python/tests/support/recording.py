"""An HTTPSaver that logs each put and put_writes in an AckLog."""

from __future__ import annotations

import copy
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP

from saver_client import HTTPSaver

from support.acklog import AckLog, PutRecord, WritesRecord


class RecordingSaver(HTTPSaver):
    """HTTPSaver that logs each put and put_writes in an AckLog."""

    def __init__(self, url: str, log: AckLog, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.ack_log = log

    def _put_record(self, config: Any, checkpoint: Any, metadata: Any) -> PutRecord:
        conf = config["configurable"]
        return PutRecord(
            str(conf["thread_id"]),
            conf.get("checkpoint_ns") or "",
            checkpoint["id"],
            conf.get("checkpoint_id") or None,
            copy.deepcopy(dict(checkpoint)),
            metadata.get("step"),
            metadata.get("source"),
        )

    def _writes_record(self, config: Any, writes: Any, task_id: str) -> WritesRecord:
        conf = config["configurable"]
        by_idx: dict[int, tuple[int, str, Any]] = {}
        for pos, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, pos)
            by_idx[idx] = (idx, channel, copy.deepcopy(value))
        return WritesRecord(
            str(conf["thread_id"]),
            conf.get("checkpoint_ns") or "",
            conf["checkpoint_id"],
            task_id,
            list(by_idx.values()),
        )

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        rec = self._put_record(config, checkpoint, metadata)
        self.ack_log.attempt(rec)
        try:
            out = super().put(config, checkpoint, metadata, new_versions)
            self.ack_log.ack(rec)
        finally:
            self.ack_log.settle()
        return out

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        rec = self._writes_record(config, writes, task_id)
        self.ack_log.attempt(rec)
        try:
            super().put_writes(config, writes, task_id, task_path)
            self.ack_log.ack(rec)
        finally:
            self.ack_log.settle()

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        rec = self._put_record(config, checkpoint, metadata)
        self.ack_log.attempt(rec)
        try:
            out = await super().aput(config, checkpoint, metadata, new_versions)
            self.ack_log.ack(rec)
        finally:
            self.ack_log.settle()
        return out

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        rec = self._writes_record(config, writes, task_id)
        self.ack_log.attempt(rec)
        try:
            await super().aput_writes(config, writes, task_id, task_path)
            self.ack_log.ack(rec)
        finally:
            self.ack_log.settle()
