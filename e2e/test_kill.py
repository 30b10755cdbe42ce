"""Crashes and shutdowns under load: nothing acknowledged is ever lost.

Concurrent graph runs go through clients that log every put and put_writes
they send and every one answered (the acknowledgements). The service is then
killed with SIGKILL again and again, or stopped with SIGTERM; after each
restart a fresh reader must find every acknowledged write, no checkpoint or
put_writes that is only partly there, and every run must resume to
completion with each step exactly once.

The short version runs in `make test` (SAVER_KILL_ROUNDS=5 kills under
SAVER_KILL_RUNS=8 runs); `make soak` runs 20 kills under 16 runs on both
stores.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import ormsgpack
from langgraph.checkpoint.base import empty_checkpoint

from saver_client import HTTPSaver, RetryPolicy

from support.acklog import AckLog, assert_live_path, verify
from support.figures import STORE, report
from support.load import drive, expected_run, load_graph
from support.processes import STOP_TIMEOUT, ServiceProcess, wait_until
from support.recording import RecordingSaver

ROUNDS = int(os.environ.get("SAVER_KILL_ROUNDS", "5"))
RUNS = int(os.environ.get("SAVER_KILL_RUNS", "8"))
STEPS = 10
# Bound on waiting for the load to make progress, or to finish its runs.
LOAD_TIMEOUT = 120.0


class Load:
    """`runs` workers, each running graph threads to completion one after
    another, resuming after failures, until told to stop."""

    def __init__(self, url: str, log: AckLog, runs: int, prefix: str) -> None:
        self.url = url
        self.log = log
        self.prefix = prefix
        self.stop = threading.Event()
        # Cleared while the test reads everything back: runs in flight go
        # on, no new one starts, so the read-back does not grow without end.
        self.admit = threading.Event()
        self.admit.set()
        self.errors: list[BaseException] = []
        self.completed: list[tuple[Any, int]] = []  # (config, resumes)
        self._lock = threading.Lock()
        self._workers = [
            threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(runs)
        ]

    def start(self) -> None:
        for w in self._workers:
            w.start()

    def _work(self, i: int) -> None:
        # Odd workers give up on a request quickly, so that a crash fails
        # their call and the run resumes from its last checkpoint; even
        # ones ride the crash out on the client's retries.
        retry = RetryPolicy(max_attempts=2, backoff=0.05) if i % 2 else None
        saver = RecordingSaver(self.url, self.log, retry=retry)
        graph = load_graph(saver, steps=STEPS)
        n = 0
        try:
            while not self.stop.is_set():
                self.admit.wait(LOAD_TIMEOUT)
                config = {"configurable": {"thread_id": f"{self.prefix}-{i}-{n}-{uuid.uuid4().hex[:8]}"}}
                resumes = drive(graph, config, {"log": ["in"]})
                with self._lock:
                    self.completed.append((config, resumes))
                n += 1
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            saver.close()

    def finish(self) -> None:
        """Let every worker complete the run it is in, then return."""
        self.stop.set()
        self.admit.set()
        deadline = time.monotonic() + LOAD_TIMEOUT
        for w in self._workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        assert not any(w.is_alive() for w in self._workers), "runs did not finish"
        self.raise_errors()

    def raise_errors(self) -> None:
        if self.errors:
            raise AssertionError(f"{len(self.errors)} runs failed") from self.errors[0]

    def progressed(self, target: int) -> Callable[[], bool]:
        def cond() -> bool:
            self.raise_errors()
            return self.log.count() >= target

        return cond


def check_runs(url: str, load: Load) -> tuple[int, int, int]:
    """Every run completed with the state of an undisturbed run, each step
    once on its live path. Returns (runs, runs that had to resume,
    abandoned checkpoints)."""
    want = expected_run(steps=STEPS)
    abandoned = 0
    with HTTPSaver(url) as reader:
        graph = load_graph(reader, steps=STEPS)
        for config, _ in load.completed:
            state = graph.get_state(config)
            assert state.next == () and state.tasks == ()
            assert state.values == want, f"{config}: {state.values}"
            abandoned += assert_live_path(reader, config, STEPS, load.log)
    if STORE == "embedded":
        # The embedded store applies a put in the process that answers it:
        # killed, it applies nothing later, so no put can land after a resume.
        assert abandoned == 0, f"{abandoned} checkpoints off a live path on the embedded store"
    return len(load.completed), sum(1 for _, r in load.completed if r), abandoned


def test_kill_9_under_load(spawn_service: Callable[..., ServiceProcess], tmp_path: Path) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    service = spawn_service()
    log = AckLog(tmp_path / "acks.jsonl")
    load = Load(service.url, log, RUNS, f"kill-{uuid.uuid4().hex[:6]}")
    started = time.monotonic()
    load.start()
    acked_at_kills = []
    restarts, verifies = [], []
    try:
        for _ in range(ROUNDS):
            # Kill at a random point of the load: after 10 to 60 more acks.
            target = log.count() + rng.randint(10, 60)
            wait_until(f"the load to reach {target} acks", load.progressed(target), LOAD_TIMEOUT)
            service.kill()
            acked_at_kills.append(log.count())
            t0 = time.monotonic()
            service.restart()
            t1 = time.monotonic()
            load.admit.clear()
            check = verify(service.url, log)
            load.admit.set()
            check.assert_ok()
            restarts.append(t1 - t0)
            verifies.append(time.monotonic() - t1)
        load.finish()
    finally:
        load.stop.set()
        load.admit.set()
    check = verify(service.url, log)
    check.assert_ok()
    runs, resumed, abandoned = check_runs(service.url, load)
    log.close()
    assert check.acked >= acked_at_kills[-1] > 0
    report(
        f"kill -9 under load: {ROUNDS} kills under {RUNS} concurrent graph runs (seed {seed}): "
        f"{check.figures()}; {runs} runs completed, {resumed} resumed after a failed call, "
        f"{abandoned} unacknowledged checkpoints left off a live path; "
        f"restart to ready {max(restarts):.2f}s at most, read-back {sum(verifies):.1f}s, "
        f"{time.monotonic() - started:.1f}s in all"
    )


class SlowPut:
    """A put whose body arrives in two halves, so that it is in flight for
    as long as the test wants."""

    def __init__(self, port: int, thread_id: str) -> None:
        saver = HTTPSaver(f"http://127.0.0.1:{port}")
        cp = empty_checkpoint()
        version = saver.get_next_version(None, None)
        cp["channel_values"] = {"data": "slow " * 200}
        cp["channel_versions"] = {"data": version}
        self.checkpoint = cp
        self.config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        metadata: Any = {"source": "input", "step": -1}
        put = saver._put_request(self.config, cp, metadata, {"data": version})
        path, body = put.path, put.body
        saver.close()
        payload = ormsgpack.packb(body)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/msgpack\r\nAccept: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        ).encode()
        self.first, self.rest = head + payload[: len(payload) // 2], payload[len(payload) // 2 :]
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=STOP_TIMEOUT)

    def send_first_half(self) -> None:
        self.sock.sendall(self.first)

    def finish(self) -> int:
        """Send the rest; return the response's status."""
        self.sock.sendall(self.rest)
        data = b""
        while chunk := self.sock.recv(65536):
            data += chunk
        self.sock.close()
        status = int(data.split(b" ", 2)[1])
        return status


def refused(port: int) -> bool:
    """Whether the port refuses connections. A connection the kernel queued
    just before the listener closed is reset instead: not yet conclusive."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
        return False
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        return False


def test_sigterm_drains_in_flight_under_load(
    spawn_service: Callable[..., ServiceProcess], tmp_path: Path
) -> None:
    service = spawn_service()
    log = AckLog(tmp_path / "acks.jsonl")
    load = Load(service.url, log, RUNS, f"term-{uuid.uuid4().hex[:6]}")
    load.start()
    try:
        wait_until("the load to start", load.progressed(20), LOAD_TIMEOUT)
        slow = [SlowPut(service.port, f"term-slow-{uuid.uuid4().hex}") for _ in range(4)]
        for s in slow:
            s.send_first_half()
        # The server accepts connections in order: once a later one is
        # answered, the slow ones are accepted and their requests started.
        assert httpx.get(f"{service.url}/healthz", headers={"Connection": "close"}).status_code == 200
        assert service.proc is not None
        acked_before = log.count()
        service.proc.send_signal(signal.SIGTERM)

        # New connections are refused at once, while the slow puts are
        # still being read: the process is draining, not gone.
        wait_until("the listener to close", lambda: refused(service.port), STOP_TIMEOUT)
        assert service.proc.poll() is None, "exited with requests in flight"
        statuses = [s.finish() for s in slow]
        assert statuses == [200] * len(slow), f"in-flight puts answered {statuses}"
        rc = service.proc.wait(timeout=STOP_TIMEOUT)
        assert rc == 0, f"exit status {rc} after SIGTERM:\n{service.log_tail()}"
        assert "saver stopped" in service.log_tail()
        acked_at_stop = log.count()

        service.restart()
        load.finish()
    finally:
        load.stop.set()
        load.admit.set()
    check = verify(service.url, log)
    check.assert_ok()
    runs, resumed, abandoned = check_runs(service.url, load)
    with HTTPSaver(service.url) as reader:
        for s in slow:
            t = reader.get_tuple(s.config)
            assert t is not None and t.checkpoint == s.checkpoint, "an in-flight put answered 200 is lost"
    log.close()
    report(
        f"SIGTERM under load ({RUNS} runs): {len(slow)} in-flight puts drained and answered 200, "
        f"new connections refused while draining, exit 0; {acked_at_stop - acked_before} more "
        f"acknowledged during the drain; {check.figures()}; {runs} runs completed, {resumed} resumed, "
        f"{abandoned} unacknowledged checkpoints left off a live path"
    )
