"""What clients sent and what the service acknowledged, and checking it against a read-back.

An `AckLog` records each put and put_writes a client attempted and those
acknowledged; `verify` reads every thread back and finds what was lost or
half-visible; `assert_live_path` checks one run's history against the log.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple

from saver_client import HTTPSaver


@dataclass
class PutRecord:
    """A put as the client sent it; acknowledged once the call returned."""

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: dict[str, Any]
    step: Any
    source: Any


@dataclass
class WritesRecord:
    """A put_writes as the client sent it: (idx, channel, value) per write."""

    thread_id: str
    ns: str
    checkpoint_id: str
    task_id: str
    writes: list[tuple[int, str, Any]]

    def keys(self) -> set[tuple[str, str]]:
        return {(ch, repr(v)) for _, ch, v in self.writes}


class AckLog:
    """Every put and put_writes a client attempted, and those acknowledged.

    An attempt is logged before the request is sent, an acknowledgement after
    the call returned, also as one JSON line per ack in `path` (a record
    that survives the test for a post-mortem).
    """

    def __init__(self, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self.puts: dict[tuple[str, str, str], list[PutRecord]] = {}
        self.writes: dict[tuple[str, str, str, str], list[WritesRecord]] = {}
        self.acked: list[PutRecord | WritesRecord] = []
        self._attempted = self._settled = 0
        self._file = open(path, "a") if path else None  # closed in close()

    def attempt(self, rec: PutRecord | WritesRecord) -> None:
        with self._lock:
            self._attempted += 1
            if isinstance(rec, PutRecord):
                self.puts.setdefault((rec.thread_id, rec.ns, rec.checkpoint_id), []).append(rec)
            else:
                key = (rec.thread_id, rec.ns, rec.checkpoint_id, rec.task_id)
                self.writes.setdefault(key, []).append(rec)

    def ack(self, rec: PutRecord | WritesRecord) -> None:
        with self._lock:
            self.acked.append(rec)
            if self._file:
                kind = "put" if isinstance(rec, PutRecord) else "put_writes"
                task = getattr(rec, "task_id", None)
                line = [kind, rec.thread_id, rec.ns, rec.checkpoint_id, task, time.time()]
                self._file.write(json.dumps(line) + "\n")
                self._file.flush()

    def settle(self) -> None:
        """A call attempted has returned, acknowledged or failed."""
        with self._lock:
            self._settled += 1

    def in_flight(self) -> int:
        with self._lock:
            return self._attempted - self._settled

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def snapshot(self) -> tuple[list[PutRecord | WritesRecord], set[str]]:
        """The acknowledgements so far and every thread attempted."""
        with self._lock:
            threads = {k[0] for k in self.puts} | {k[0] for k in self.writes}
            return list(self.acked), threads

    def close(self) -> None:
        if self._file:
            self._file.close()


@dataclass
class Check:
    """What a reader found of what the clients wrote."""

    acked_puts: int = 0
    acked_writes: int = 0
    recovered_puts: int = 0
    recovered_writes: int = 0
    # Acknowledged writes against a checkpoint not put (yet): LangGraph may
    # store a task's writes while its checkpoint is being put, and the API
    # shows writes only with their checkpoint, so these cannot be read back
    # until it is; a run whose input checkpoint failed starts again under a
    # new id, leaving them unreadable for good. Neither recovered nor lost.
    unobservable: int = 0
    visible: int = 0
    lost: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)

    @property
    def acked(self) -> int:
        return self.acked_puts + self.acked_writes

    @property
    def recovered(self) -> int:
        return self.recovered_puts + self.recovered_writes

    def figures(self) -> str:
        s = (
            f"acknowledged {self.acked} (puts {self.acked_puts}, put_writes {self.acked_writes}), "
            f"recovered {self.recovered}, lost {len(self.lost)}, partial visible {len(self.partial)}"
        )
        if self.unobservable:
            s += (
                f"; plus {self.unobservable} acknowledged put_writes against a checkpoint its run"
                " never put (abandoned first tries of an input step): unreadable through the API"
            )
        return s

    def assert_ok(self) -> None:
        assert not self.lost, f"{len(self.lost)} acknowledged writes lost: {self.lost[:5]}"
        assert not self.partial, f"{len(self.partial)} partial or unknown: {self.partial[:5]}"


def verify(url: str, log: AckLog) -> Check:
    """Read back every thread the clients wrote to, through a fresh client.

    Every acknowledged put must be there, equal to what was put (checkpoint
    with all its channel values, parent); every acknowledged write must be
    among its checkpoint's pending writes. Nothing else may be visible:
    every checkpoint read must equal one that was put, and each put_writes
    call must be visible whole or not at all.
    """
    acked, threads = log.snapshot()
    found: dict[tuple[str, str, str], CheckpointTuple] = {}
    check = Check()
    with HTTPSaver(url) as reader, ThreadPoolExecutor(8) as pool:

        def read(thread: str) -> list[CheckpointTuple]:
            return list(reader.list({"configurable": {"thread_id": thread}}))

        for thread, tuples in zip(sorted(threads), pool.map(read, sorted(threads))):
            for t in tuples:
                conf = t.config["configurable"]
                found[(thread, conf["checkpoint_ns"], conf["checkpoint_id"])] = t
    with log._lock:
        puts = {k: list(v) for k, v in log.puts.items()}
        writes = {k: list(v) for k, v in log.writes.items()}
    for key, t in found.items():
        check.visible += 1
        parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        attempts = puts.get(key)
        if not attempts:
            check.partial.append(f"{key}: visible but never put")
        elif not any(a.checkpoint == t.checkpoint and a.parent_id == parent for a in attempts):
            check.partial.append(f"{key}: differs from what was put: {t.checkpoint!r:.300}")
        by_task: dict[str, list[tuple[str, str]]] = {}
        for task_id, channel, value in t.pending_writes or ():
            by_task.setdefault(task_id, []).append((channel, repr(value)))
        for task_id, visible in by_task.items():
            calls = writes.get((*key, task_id), [])
            covered: set[tuple[str, str]] = set()
            for call in calls:
                keys = call.keys()
                if keys & set(visible):
                    if not keys <= set(visible):
                        check.partial.append(f"{key} task {task_id}: part of a put_writes visible")
                    covered |= keys
            if set(visible) - covered:
                check.partial.append(f"{key} task {task_id}: writes never put: {visible!r:.200}")
    acked_puts = {(r.thread_id, r.ns, r.checkpoint_id) for r in acked if isinstance(r, PutRecord)}
    for rec in acked:
        t = found.get((rec.thread_id, rec.ns, rec.checkpoint_id))
        if isinstance(rec, PutRecord):
            check.acked_puts += 1
            if t is not None and t.checkpoint == rec.checkpoint:
                check.recovered_puts += 1
            else:
                check.lost.append(f"put {rec.thread_id} {rec.checkpoint_id} step {rec.step}")
            continue
        check.acked_writes += 1
        if t is None and (rec.thread_id, rec.ns, rec.checkpoint_id) not in acked_puts:
            check.unobservable += 1
            continue
        have = {(tid, ch, repr(v)) for tid, ch, v in (t.pending_writes if t else ())}
        have_special = {(tid, ch) for tid, ch, _ in (t.pending_writes if t else ())}
        if all(
            ((rec.task_id, ch, repr(v)) in have) if idx >= 0 else ((rec.task_id, ch) in have_special)
            for idx, ch, v in rec.writes
        ):
            check.recovered_writes += 1
        else:
            seen = [(ch, v) for tid, ch, v in (t.pending_writes if t else ()) if tid == rec.task_id]
            check.lost.append(
                f"put_writes {rec.thread_id} {rec.checkpoint_id} task {rec.task_id}: "
                f"acked {[(i, ch, v) for i, ch, v in rec.writes]!r:.300}, "
                f"checkpoint {'found' if t else 'missing'}, visible for the task {seen!r:.300}"
            )
    return check


def assert_live_path(saver: Any, config: Any, steps: int, log: AckLog) -> int:
    """The path from the thread's latest checkpoint back to its root holds
    each step exactly once, -1 (input) to steps + 1: nothing lost or run
    twice as far as the run's state goes.

    A checkpoint off that path is an abandoned attempt: a put whose outcome
    the client never learnt (the service died with it in flight, and it was
    applied after the run had resumed from the one before). That is allowed
    only for puts never acknowledged; an acknowledged checkpoint off the
    path means a resume went back past an acknowledged write. Returns the
    number of abandoned checkpoints.
    """
    history = list(saver.list(config))
    thread = config["configurable"]["thread_id"]

    def cp_id(t: CheckpointTuple) -> str:
        return str(t.config["configurable"]["checkpoint_id"])

    def parent(t: CheckpointTuple) -> Any:
        return (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")

    shape = [(t.metadata.get("step"), cp_id(t), parent(t), len(t.pending_writes or ())) for t in history]
    by_id = {cp_id(t): t for t in history}
    live: list[CheckpointTuple] = []
    node: CheckpointTuple | None = history[0] if history else None
    while node is not None:
        live.append(node)
        node = by_id.get(parent(node)) if parent(node) else None
    got = [t.metadata.get("step") for t in reversed(live)]
    # The input (-1), its start (0), one step per chain node and one for
    # the fan-out.
    assert got == list(range(-1, steps + 2)), (
        f"{thread}: live path steps {got}: lost or run twice; (step, id, parent, writes): {shape}"
    )
    on_path = {cp_id(t) for t in live}
    with log._lock:
        acked = {(r.thread_id, r.ns, r.checkpoint_id) for r in log.acked if isinstance(r, PutRecord)}
    off = [t for t in history if cp_id(t) not in on_path]
    bad = [cp_id(t) for t in off if (thread, "", cp_id(t)) in acked]
    assert not bad, (
        f"{thread}: acknowledged checkpoints {bad} are off the live path; (step, id, parent, writes): {shape}"
    )
    return len(off)
