"""Fixtures: the saver service under test.

By default each session starts the binary named by `$SAVER_BIN` on a temporary
database. When `$SAVER_URL` is set, the tests use that running service instead
and start nothing, so the same tests can run against any deployment.
"""

from __future__ import annotations

import copy
import json
import operator
import os
import random
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import httpx
import pytest
from langgraph.checkpoint.base import WRITES_IDX_MAP, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import HTTPSaver
from saver_client.errors import SaverConnectionError, UnavailableError

# Bounds for waiting on the service; generous because CI machines are small.
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
POLL_INTERVAL = 0.02


@dataclass
class ServiceProcess:
    """A saver service process owned by the tests, restartable on the same db."""

    binary: str
    workdir: Path
    # Extra environment for the process, over the tests' own (e.g. SAVER_FAULTS).
    env: dict[str, str] = field(default_factory=dict)
    db: Path = field(init=False)
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)
    url: str = field(default="", init=False)
    _starts: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.db = self.workdir / "saver.db"

    @property
    def log(self) -> Path:
        return self.workdir / "service.log"

    def start(self, addr: str = "127.0.0.1:0") -> str:
        """Start the service and wait until it is ready; return its base URL."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self._starts += 1
        addr_file = self.workdir / f"addr-{self._starts}"
        with open(self.log, "ab") as log:
            log.write(f"--- start {self._starts} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    "serve",
                    "-addr",
                    addr,
                    "-addr-file",
                    str(addr_file),
                    "-db",
                    str(self.db),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env} if self.env else None,
            )
        self.url = self._wait_ready(addr_file)
        return self.url

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[-1])

    def restart(self) -> str:
        """Start it again, after it stopped, on the same db and port."""
        return self.start(f"127.0.0.1:{self.port}")

    def _wait_ready(self, addr_file: Path) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        url = ""
        last_error = "the address file was never written"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"saver exited with {self.proc.returncode} before it was ready:\n"
                    + self.log_tail()
                )
            if not url:
                try:
                    addr = addr_file.read_text().strip()
                except FileNotFoundError:
                    addr = ""
                # A half-written file has no port yet; read it again next time.
                if addr and addr.rsplit(":", 1)[-1].isdigit():
                    url = f"http://{addr}"
            if url:
                try:
                    if httpx.get(f"{url}/readyz", timeout=2.0).status_code == 200:
                        return url
                    last_error = "/readyz did not answer 200"
                except httpx.TransportError as exc:
                    last_error = f"/readyz failed: {exc!r}"
            time.sleep(POLL_INTERVAL)
        self.kill()
        raise RuntimeError(
            f"saver not ready after {START_TIMEOUT}s ({last_error}):\n" + self.log_tail()
        )

    def kill(self) -> None:
        """Kill -9: no graceful shutdown, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT)

    def stop(self) -> None:
        """Graceful stop, escalating to kill -9 if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()

    def crash_and_restart(self) -> str:
        """Kill -9 the service and start it again on the same db and port.

        The same port lets existing clients reconnect without being told.
        """
        port = self.url.rsplit(":", 1)[-1]
        self.kill()
        return self.start(f"127.0.0.1:{port}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def _binary() -> str:
    binary = os.environ.get("SAVER_BIN")
    if not binary:
        raise pytest.UsageError(
            "set SAVER_BIN to the saver binary (make test-py does) or SAVER_URL "
            "to a running service"
        )
    if not os.access(binary, os.X_OK):
        raise pytest.UsageError(f"SAVER_BIN={binary} is not an executable file")
    return binary


def external_url() -> str | None:
    """The URL of a service the tests do not own, if one was given."""
    return os.environ.get("SAVER_URL") or None


@pytest.fixture(scope="session")
def saver_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the service under test, started for the session unless given."""
    if url := external_url():
        yield url.rstrip("/")
        return
    service = ServiceProcess(_binary(), tmp_path_factory.mktemp("saver"))
    url = service.start()
    try:
        yield url
    finally:
        service.stop()


@pytest.fixture
def spawn_service(tmp_path: Path) -> Iterator[Callable[..., ServiceProcess]]:
    """Start a private service that a test may crash and restart.

    `spawn(env={...})` adds environment variables for that service only.
    """
    if external_url() and not os.environ.get("SAVER_BIN"):
        pytest.skip("needs a service it can kill: SAVER_URL names one it does not own")
    started: list[ServiceProcess] = []

    def spawn(env: dict[str, str] | None = None) -> ServiceProcess:
        service = ServiceProcess(_binary(), tmp_path / f"svc{len(started)}", dict(env or {}))
        service.workdir.mkdir()
        started.append(service)
        service.start()
        return service

    try:
        yield spawn
    finally:
        for service in started:
            service.stop()


@pytest.fixture
def saver(saver_url: str) -> Iterator[HTTPSaver]:
    with HTTPSaver(saver_url) as s:
        yield s


@pytest.fixture
def thread_id() -> str:
    return f"t-{uuid.uuid4()}"


# -- reliability tests: test_kill.py, test_faults.py, test_concurrency.py ------
#
# What the tests measure (faults injected, kills, acknowledged / recovered /
# lost writes) is printed in the terminal summary, even under -q, and kept in
# .cache/reliability/figures-<store>.txt so that it can be quoted.

# The store the services under test run on (make test-aws sets dynamodb).
STORE = os.environ.get("SAVER_STORE") or "bolt"
REPO = Path(__file__).resolve().parents[2]
FIGURES: list[str] = []

dynamodb_only = pytest.mark.skipif(
    STORE != "dynamodb",
    reason="DynamoDB/S3 faults: runs when the suite runs on the dynamodb store (make test-aws)",
)


def report(line: str) -> None:
    """Record a figure for the terminal summary."""
    FIGURES.append(f"[{STORE}] {line}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for line in FIGURES:
        terminalreporter.write_line(line)
    out = REPO / ".cache" / "reliability" / f"figures-{STORE}.txt"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(FIGURES) + "\n")
    except OSError:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(what: str, cond: Callable[[], bool], timeout: float = START_TIMEOUT) -> None:
    """Poll cond until it holds; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(POLL_INTERVAL)


def is_ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


# -- acknowledgements ------------------------------------------------------------


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


# -- a graph to put load on the service ------------------------------------------


class RunState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    data: str


def load_graph(
    saver: Any,
    *,
    steps: int = 10,
    payload: int = 64,
    calls: Counter[str] | None = None,
    before: Callable[[str], None] | None = None,
) -> Any:
    """A chain of `steps` nodes with a fan-out of three parallel nodes in the
    middle; each node appends its name to `log`, and chain nodes put
    `payload` bytes in `data` (a new blob every step). `before(name)` runs
    at the start of every node."""
    lock = threading.Lock()

    def node(name: str, chain: bool) -> Callable[[RunState], RunState]:
        def run(state: RunState) -> RunState:
            if before is not None:
                before(name)
            if calls is not None:
                with lock:
                    calls[name] += 1
            out: RunState = {"log": [name]}
            if chain:
                out["data"] = (name * payload)[:payload]
            return out

        return run

    g = StateGraph(RunState)
    names = [f"s{i:02d}" for i in range(steps)]
    fan = ["f0", "f1", "f2"]
    for n in names:
        g.add_node(n, node(n, True))  # type: ignore[call-overload]
    for n in fan:
        g.add_node(n, node(n, False))  # type: ignore[call-overload]
    g.add_edge(START, names[0])
    mid = steps // 2
    for a, b in zip(names, names[1:]):
        if a == names[mid]:
            for f in fan:
                g.add_edge(a, f)
            g.add_edge(fan, b)
        else:
            g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(checkpointer=saver)


def expected_run(steps: int = 10, payload: int = 64) -> dict[str, Any]:
    """The final state of load_graph, run on InMemorySaver."""
    graph = load_graph(InMemorySaver(), steps=steps, payload=payload)
    out: dict[str, Any] = graph.invoke(
        {"log": ["in"]}, {"configurable": {"thread_id": "expected"}}, durability="sync"
    )
    return out


TRANSIENT = (SaverConnectionError, UnavailableError)


def drive(graph: Any, config: Any, inp: Any, max_resumes: int = 50) -> int:
    """Run the thread to completion, resuming from its last checkpoint after
    every transient failure; return how many times it resumed."""
    resumes = 0
    while True:
        try:
            state = graph.get_state(config)
            if state.created_at is None:
                graph.invoke(inp, config, durability="sync")
            elif state.tasks:
                # Not `state.next`: a task whose writes were stored before
                # the failure is left out of next, though its step still has
                # to be finished.
                graph.invoke(None, config, durability="sync")
            else:
                return resumes
        except TRANSIENT:
            resumes += 1
            if resumes > max_resumes:
                raise


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


# -- outages: a DynamoDB we can stop, an S3 we can cut off ---------------------

DYNOXIDE = Path(
    os.environ.get("DYNOXIDE_BIN")
    or REPO / ".cache/localstack/npm/node_modules/@dynoxide/linux-x64/dynoxide"
)


class Dynoxide:
    """A private DynamoDB emulator on a SQLite file, so that it can be stopped
    and started again on the same port with the same data, or frozen."""

    def __init__(self, workdir: Path) -> None:
        if not os.access(DYNOXIDE, os.X_OK):
            pytest.fail(f"no dynoxide at {DYNOXIDE} (localstack/up.sh installs it; or set DYNOXIDE_BIN)")
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.workdir / "dynoxide.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(DYNOXIDE), "serve", "--host", "127.0.0.1", "--port", str(self.port),
                 "--db-path", str(self.workdir / "dynamodb.sqlite")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip

        def answers() -> bool:
            assert self.proc is not None
            assert self.proc.poll() is None, "dynoxide exited during startup"
            try:
                httpx.get(self.url, timeout=1.0)
                return True
            except httpx.TransportError:
                return False

        wait_until("dynoxide to answer", answers)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # in case it is frozen
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT)

    def freeze(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


class TcpProxy:
    """A TCP forwarder on a fixed loopback port that can be switched off, which
    refuses new connections and cuts open ones as a crashed server would, and
    on again on the same port."""

    def __init__(self, target: str) -> None:
        host, port = urlsplit(target).hostname, urlsplit(target).port
        assert host and port, target
        self.target = (host, port)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        ln = socket.socket()
        ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ln.bind(("127.0.0.1", self.port))
        ln.listen(64)
        self._listener = ln
        self._spawn(self._accept, ln)

    def _spawn(self, fn: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        with self._lock:
            self._threads.append(t)

    def _accept(self, ln: socket.socket) -> None:
        while True:
            try:
                client, _ = ln.accept()
            except OSError:
                return  # switched off
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns |= {client, upstream}
            self._spawn(self._pump, client, upstream)
            self._spawn(self._pump, upstream, client)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        """Switch off: the port refuses connections, open ones are cut."""
        ln, self._listener = self._listener, None
        if ln is not None:
            try:
                ln.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            ln.close()
        with self._lock:
            conns, self._conns = self._conns, set()
            threads, self._threads = self._threads, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        for t in threads:
            t.join(timeout=STOP_TIMEOUT)


class SpreadProxy(TcpProxy):
    """A TCP proxy in front of several replicas, as a load balancer is: each
    connection goes to a replica picked at random, or to another one when
    that one refuses it (killed, or not listening yet). A client that sends
    `Connection: close` has every request spread. `served` counts the
    connections each replica took."""

    def __init__(self, targets: list[str], seed: int) -> None:
        super().__init__(targets[0])
        self.targets = []
        for t in targets:
            host, port = urlsplit(t).hostname, urlsplit(t).port
            assert host and port, t
            self.targets.append((host, port))
        self.served: Counter[int] = Counter()
        self._rng = random.Random(seed)

    def _accept(self, ln: socket.socket) -> None:
        while True:
            try:
                client, _ = ln.accept()
            except OSError:
                return  # switched off
            with self._lock:
                order = self._rng.sample(self.targets, len(self.targets))
            for target in order:
                try:
                    upstream = socket.create_connection(target, timeout=5)
                    upstream.settimeout(None)
                    break
                except OSError:
                    continue
            else:
                client.close()
                continue
            with self._lock:
                self.served[target[1]] += 1
                self._conns |= {client, upstream}
            threading.Thread(target=self._relay, args=(client, upstream), daemon=True).start()

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        """Pump both ways until either side ends, then close both: a proxy
        that serves a connection per request must not keep them."""
        back = threading.Thread(target=self._pump, args=(upstream, client), daemon=True)
        back.start()
        self._pump(client, upstream)
        back.join()
        with self._lock:
            self._conns -= {client, upstream}
        client.close()
        upstream.close()
