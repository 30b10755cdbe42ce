"""Concurrent calls through the HTTP API give the same result as the same
work done one call after another.

Each test does its work twice against the live service: once with the calls
racing (threads released together by a barrier), once serially on other
thread ids. The full tuples read back, checkpoint, values, metadata, parent
and pending writes, must be equal once the thread id is set aside.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, empty_checkpoint

from saver_client import HTTPSaver

from support.compare import history_sig
from support.figures import report
from support.load import drive, load_graph

Work = Callable[[HTTPSaver, str], None]


@pytest.fixture
def savers(saver_url: str) -> Iterator[Callable[[], HTTPSaver]]:
    made: list[HTTPSaver] = []

    def make() -> HTTPSaver:
        s = HTTPSaver(saver_url)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def race(jobs: list[Callable[[], None]]) -> None:
    """Run every job in its own thread, released at the same moment."""
    barrier = threading.Barrier(len(jobs))

    def run(job: Callable[[], None]) -> None:
        barrier.wait()
        job()

    with ThreadPoolExecutor(len(jobs)) as pool:
        for f in [pool.submit(run, j) for j in jobs]:
            f.result()


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def checkpoint(cid: str, values: dict[str, Any], versions: dict[str, str]) -> Checkpoint:
    cp = empty_checkpoint()
    cp["id"] = cid
    cp["ts"] = "2026-01-01T00:00:00+00:00"
    cp["channel_values"] = dict(values)
    cp["channel_versions"] = dict(versions)
    return cp


def cid(n: int) -> str:
    return f"1f000000-0000-6000-8000-{n:012d}"


def normal(t: CheckpointTuple | None, thread_id: str) -> Any:
    """A tuple with its thread id replaced, for comparing two threads."""
    assert t is not None

    def conf(c: RunnableConfig | None) -> Any:
        if c is None:
            return None
        d = dict(c["configurable"])
        assert d.pop("thread_id") == thread_id
        return d

    meta = dict(t.metadata)
    meta.pop("thread_id", None)
    return {
        "config": conf(t.config),
        "checkpoint": t.checkpoint,
        "metadata": meta,
        "parent": conf(t.parent_config),
        "pending_writes": t.pending_writes,
    }


def everything(saver: HTTPSaver, thread_id: str) -> list[Any]:
    """Every tuple of the thread, all namespaces, in list order."""
    return [normal(t, thread_id) for t in saver.list({"configurable": {"thread_id": thread_id}})]


def test_32_concurrent_put_writes_to_one_checkpoint(savers: Callable[[], HTTPSaver]) -> None:
    saver = savers()
    base = checkpoint(cid(1), {"a": "x"}, {"a": "1"})

    def calls(thread_id: str) -> list[Callable[[], None]]:
        cfg = config(thread_id, "", cid(1))
        out: list[Callable[[], None]] = []
        for i in range(32):
            # 24 tasks; 8 of the calls repeat another task's call exactly, as
            # a retried request racing its first try would.
            task = i if i < 24 else i - 24
            writes = [("log", f"task {task} entry"), (f"ch{task % 4}", {"task": task, "n": [task] * 3})]
            if task % 6 == 0:
                writes.append(("__error__", f"task {task} failed"))  # a special channel: upserts
            out.append(lambda w=writes, t=task: saver.put_writes(cfg, w, f"task-{t:02d}", f"~path-{t % 3}"))
        return out

    thread_a, thread_b = f"cw-race-{uuid.uuid4()}", f"cw-serial-{uuid.uuid4()}"
    for t in (thread_a, thread_b):
        saver.put(config(t), base, {"source": "loop", "step": 1}, {"a": "1"})
    started = time.monotonic()
    race(calls(thread_a))
    raced = time.monotonic() - started
    for call in calls(thread_b):
        call()

    got = saver.get_tuple(config(thread_a, "", cid(1)))
    want = saver.get_tuple(config(thread_b, "", cid(1)))
    assert normal(got, thread_a) == normal(want, thread_b)
    assert got is not None and len(got.pending_writes) == 24 * 2 + 4
    assert everything(saver, thread_a) == everything(saver, thread_b)
    report(f"concurrency: 32 put_writes raced on one checkpoint in {raced:.2f}s: tuple identical to serial")


def test_concurrent_identical_puts_are_one_put(savers: Callable[[], HTTPSaver]) -> None:
    saver = savers()
    cp = checkpoint(cid(7), {"a": "x" * 1000, "b": [1, 2, 3]}, {"a": "1", "b": "1"})

    def put(thread_id: str) -> None:
        saver.put(config(thread_id), cp, {"source": "loop", "step": 3}, {"a": "1", "b": "1"})

    thread_a, thread_b = f"cp-race-{uuid.uuid4()}", f"cp-serial-{uuid.uuid4()}"
    race([lambda: put(thread_a)] * 16)
    put(thread_b)
    assert everything(saver, thread_a) == everything(saver, thread_b)
    assert len(everything(saver, thread_a)) == 1


def chain(saver: HTTPSaver, thread_id: str, ns: str, n: int, tag: str) -> None:
    """A namespace's history: n checkpoints, each with a new version of one
    of three channels, each parent of the next, with a task's writes."""
    versions: dict[str, str] = {}
    values: dict[str, Any] = {}
    parent: str | None = None
    for i in range(n):
        ch = f"c{i % 3}"
        versions[ch] = f"{i + 1:032d}.{tag}"
        values[ch] = {"ns": ns, "step": i, "blob": f"{tag}:{ns}:{i}" * 20}
        cp = checkpoint(cid(100 + i), values, versions)
        cfg = config(thread_id, ns, parent)
        saver.put(cfg, cp, {"source": "loop", "step": i, "ns": ns}, {ch: versions[ch]})
        saver.put_writes(config(thread_id, ns, cp["id"]), [("out", f"{ns}/{i}")], f"task-{i}", "")
        parent = cp["id"]


def test_puts_on_several_namespaces_of_one_thread_at_once(savers: Callable[[], HTTPSaver]) -> None:
    # The same checkpoint ids in every namespace: keys must keep them apart.
    namespaces = ["", "sub:1", "sub:2", "sub:1|inner:1", "a", "a:b", "b", "sub:3"]
    thread_a, thread_b = f"ns-race-{uuid.uuid4()}", f"ns-serial-{uuid.uuid4()}"
    savers_a = [savers() for _ in namespaces]  # one connection pool per racer
    started = time.monotonic()
    race([lambda s=s, ns=ns: chain(s, thread_a, ns, 6, "v") for s, ns in zip(savers_a, namespaces)])
    raced = time.monotonic() - started
    saver = savers()
    for ns in namespaces:
        chain(saver, thread_b, ns, 6, "v")

    got, want = everything(saver, thread_a), everything(saver, thread_b)
    assert len(got) == len(namespaces) * 6
    assert got == want
    for ns in namespaces:
        assert normal(saver.get_tuple(config(thread_a, ns)), thread_a) == normal(
            saver.get_tuple(config(thread_b, ns)), thread_b
        )
    report(
        f"concurrency: {len(namespaces)} namespaces of one thread put at once "
        f"({len(got)} checkpoints in {raced:.2f}s): tuples identical to serial"
    )


def test_16_threads_at_once(savers: Callable[[], HTTPSaver]) -> None:
    race_ids = [f"th-race-{i}-{uuid.uuid4()}" for i in range(16)]
    serial_ids = [f"th-serial-{i}-{uuid.uuid4()}" for i in range(16)]
    racers = [savers() for _ in race_ids]
    started = time.monotonic()
    race([lambda s=s, t=t: chain(s, t, "", 5, "t") for s, t in zip(racers, race_ids)])
    raced = time.monotonic() - started
    saver = savers()
    for t in serial_ids:
        chain(saver, t, "", 5, "t")
    for a, b in zip(race_ids, serial_ids):
        assert everything(saver, a) == everything(saver, b)

    # Real graphs: 16 runs at once against 16 one after another. Their ids
    # are time-based, so histories are compared by signature.
    def run(s: HTTPSaver, thread_id: str) -> None:
        drive(load_graph(s, steps=6), config(thread_id), {"log": ["in"]}, max_resumes=0)

    graphs_a = [f"gr-race-{i}-{uuid.uuid4()}" for i in range(16)]
    graphs_b = [f"gr-serial-{i}-{uuid.uuid4()}" for i in range(16)]
    started = time.monotonic()
    race([lambda s=s, t=t: run(s, t) for s, t in zip(racers, graphs_a)])
    graphs_raced = time.monotonic() - started
    for t in graphs_b:
        run(saver, t)
    reader = load_graph(saver, steps=6)
    for a, b in zip(graphs_a, graphs_b):
        ha = history_sig(list(reader.get_state_history(config(a))))
        hb = history_sig(list(reader.get_state_history(config(b))))
        assert ha == hb
        assert len(ha) == 6 + 3
    report(
        f"concurrency: 16 threads at once: 80 checkpoints in {raced:.2f}s, 16 graph runs in "
        f"{graphs_raced:.2f}s; tuples and histories identical to serial"
    )
