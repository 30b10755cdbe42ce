"""DynamoDB and S3 failing under a running graph: throttling, and outages.

These run when the suite runs against the dynamodb store (make test-aws):

- 30% of DynamoDB requests throttled, injected inside the real service with
  its test-only SAVER_FAULTS switch (cmd/saver/faults.go): graphs complete,
  and every acknowledged checkpoint is there, read by a service without
  faults.
- DynamoDB stopped mid-run (a private dynoxide on a SQLite file, stopped and
  started again on the same port and data), DynamoDB frozen (SIGSTOP), S3
  cut off (a proxy switched off): while it lasts every call answers a clear
  503 with Retry-After within the request timeout, never a 500 or a hang;
  once it is back the run resumes from its last checkpoint, with nothing
  lost or run twice.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from saver_client import HTTPSaver, RetryPolicy

from support.acklog import AckLog, assert_live_path, verify
from support.emulators import Dynoxide
from support.figures import dynamodb_only, report
from support.load import TRANSIENT, drive, expected_run, load_graph
from support.processes import ServiceProcess, is_ready, wait_until
from support.proxy import TcpProxy
from support.recording import RecordingSaver

pytestmark = dynamodb_only

STEPS = 8
# Bound on one run, and on waiting for an outage to be noticed.
RUN_TIMEOUT = 180.0
# The services in the outage tests bound a request's store work to this.
REQUEST_TIMEOUT = 5.0
# Slack on top of it for the answer to come back to the test.
SLACK = 3.0


class RetryCounter(logging.Handler):
    """Counts the client's retries (it logs one warning per retry)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.retries = 0
        self.unavailable = 0

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "retrying in" in msg:
            self.retries += 1
            self.unavailable += "unavailable" in msg


@pytest.fixture
def client_retries() -> Iterator[RetryCounter]:
    counter = RetryCounter()
    logger = logging.getLogger("saver_client")
    logger.addHandler(counter)
    try:
        yield counter
    finally:
        logger.removeHandler(counter)


def test_graphs_complete_while_dynamodb_throttles(
    spawn_service: Callable[..., ServiceProcess], tmp_path: Path, client_retries: RetryCounter
) -> None:
    stats = tmp_path / "faults.json"
    service = spawn_service(
        {"SAVER_FAULTS": "dynamodb:throttle=0.3", "SAVER_FAULTS_STATS": str(stats)}
    )
    assert "TEST-ONLY fault injection is on" in service.log.read_text()
    log = AckLog(tmp_path / "acks.jsonl")
    want = expected_run(steps=STEPS)
    configs = [{"configurable": {"thread_id": f"throttled-{i}-{uuid.uuid4().hex}"}} for i in range(4)]
    errors: list[BaseException] = []
    resumes = Counter[str]()

    def run(config: Any) -> None:
        try:
            with RecordingSaver(service.url, log) as saver:
                graph = load_graph(saver, steps=STEPS)
                resumes[config["configurable"]["thread_id"]] = drive(graph, config, {"log": ["in"]})
        except BaseException as exc:
            errors.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(c,)) for c in configs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(RUN_TIMEOUT)
    elapsed = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), "runs did not finish"
    if errors:
        raise errors[0]
    injected = json.loads(stats.read_text())

    # Read everything back through a service without faults on the same table.
    clean = spawn_service()
    with HTTPSaver(clean.url) as reader:
        graph = load_graph(reader, steps=STEPS)
        for config in configs:
            state = graph.get_state(config)
            assert state.values == want and state.tasks == ()
            # No kill here: every checkpoint is on the live path.
            assert assert_live_path(reader, config, STEPS, log) == 0
    check = verify(clean.url, log)
    check.assert_ok()
    throttled = injected["injected"].get("dynamodb:throttle", 0)
    requests = injected["requests"].get("dynamodb", 0)
    assert throttled > 0.2 * requests, injected
    report(
        f"DynamoDB throttling (SAVER_FAULTS=dynamodb:throttle=0.3): {requests} DynamoDB requests, "
        f"{throttled} ThrottlingException injected and survived; {len(configs)} concurrent runs "
        f"completed in {elapsed:.1f}s ({client_retries.unavailable} 503s reached the client and "
        f"were retried, {sum(resumes.values())} resumes); {check.figures()}"
    )


# -- outages -----------------------------------------------------------------------


def _typed(label: str, size: int) -> dict[str, str]:
    data = label.encode().ljust(size, b".")
    return {"type": "bytes", "data": base64.b64encode(data).decode()}


def probe_calls(thread: str, size: int) -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    """One call of each kind, in JSON: reads of thread, and a put and a
    put_writes of `size` bytes per value on a thread of their own (a write
    that timed out may still land once a frozen backend wakes up)."""
    probe = f"probe-{uuid.uuid4().hex}"
    put = {
        "checkpoint_ns": "",
        "checkpoint_id": "0001",
        "parent_checkpoint_id": "",
        "checkpoint": _typed("skeleton", 0),
        "metadata": {"step": -1, "source": "input"},
        "channel_versions": {"data": "1"},
        "blobs": [{"channel": "data", "version": "1", "value": _typed("probe", size)}],
    }
    writes = {
        "checkpoint_ns": "",
        "checkpoint_id": "0001",
        "writes": [{"task_id": "t", "task_path": "", "idx": 0, "channel": "data", "value": _typed("w", size)}],
    }
    return {
        "put": ("POST", f"/v1/threads/{probe}/checkpoints", put),
        "put_writes": ("POST", f"/v1/threads/{probe}/writes", writes),
        # The run's own latest checkpoint (with its offloaded values).
        "get": ("GET", f"/v1/threads/{thread}/checkpoint", None),
        "search": ("POST", "/v1/checkpoints/search", {"thread_id": thread}),
    }


def assert_unavailable(url: str, calls: dict[str, tuple[str, str, dict[str, Any] | None]]) -> list[float]:
    """Every call answers 503 unavailable with Retry-After, within the
    request timeout; returns how long each took."""
    def call(name: str, method: str, path: str, body: Any) -> float:
        start = time.monotonic()
        r = httpx.request(
            method, url + path, json=body, headers={"Accept": "application/json"},
            timeout=REQUEST_TIMEOUT * 4,
        )  # fmt: skip
        took = time.monotonic() - start
        if path == "/readyz":
            assert r.status_code == 503, f"/readyz answered {r.status_code} during the outage"
            return took
        code = (r.json().get("error") or {}).get("code") if r.content else None
        assert (r.status_code, code) == (503, "unavailable"), f"{name}: {r.status_code} {r.text[:300]}"
        assert r.headers.get("Retry-After"), f"{name}: 503 without Retry-After"
        assert took < REQUEST_TIMEOUT + SLACK, f"{name}: answered after {took:.1f}s"
        return took

    assert httpx.get(f"{url}/healthz").status_code == 200
    # At once, so that a hanging backend costs one request timeout, not five.
    with ThreadPoolExecutor(len(calls) + 1) as pool:
        futures = [pool.submit(call, name, *c) for name, c in calls.items()]
        futures.append(pool.submit(call, "readyz", "GET", "/readyz", None))
        return [f.result() for f in futures]


def run_through_outage(
    service: ServiceProcess,
    *,
    what: str,
    down: Callable[[], None],
    up: Callable[[], None],
    probe_size: int,
    payload: int,
    tmp_path: Path,
    between_calls: bool = False,
) -> None:
    """Run a graph; when it reaches its fifth node, take the backend down;
    check that calls get clear 503s; bring it back; the run must resume from
    its last checkpoint and complete with nothing lost or run twice.

    `between_calls`: take it down only once no put or put_writes is in
    flight, rather than whenever the fifth node starts (the writes of the
    fourth may still be going)."""
    calls: Counter[str] = Counter()
    reached, go_on = threading.Event(), threading.Event()

    def before(name: str) -> None:
        if name == "s04" and not reached.is_set():
            reached.set()
            go_on.wait(RUN_TIMEOUT)

    log = AckLog(tmp_path / f"acks-{what}.jsonl")
    # The application gives up on a call quickly and resumes the run once
    # the service is ready again, as a worker would.
    saver = RecordingSaver(service.url, log, retry=RetryPolicy(max_attempts=2, backoff=0.05))
    graph = load_graph(saver, steps=STEPS, payload=payload, calls=calls, before=before)
    config: Any = {"configurable": {"thread_id": f"outage-{uuid.uuid4().hex}"}}
    failures: list[BaseException] = []
    errors: list[BaseException] = []

    def app() -> None:
        try:
            while True:
                try:
                    drive(graph, config, {"log": ["in"]}, max_resumes=0)
                    return
                except TRANSIENT as exc:
                    failures.append(exc)
                    wait_until("the service to be ready again", lambda: is_ready(service.url), RUN_TIMEOUT)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=app)
    worker.start()
    is_down = False
    try:
        wait_until("the run to reach s04", lambda: reached.is_set() or bool(errors), RUN_TIMEOUT)
        assert not errors, errors
        if between_calls:
            wait_until("the writes in flight to settle", lambda: log.in_flight() == 0, RUN_TIMEOUT)
        acked_before = log.count()
        down()
        is_down = True
        outage = time.monotonic()
        go_on.set()
        took = assert_unavailable(
            service.url, probe_calls(config["configurable"]["thread_id"], probe_size)
        )
        wait_until("the run to see the outage", lambda: bool(failures or errors), RUN_TIMEOUT)
        assert not errors, errors
        up()
        is_down = False
        wait_until("the service to be ready", lambda: is_ready(service.url), RUN_TIMEOUT)
        outage = time.monotonic() - outage
    finally:
        go_on.set()
        if is_down:  # a check failed mid-outage: let the run finish anyway
            up()
        worker.join(RUN_TIMEOUT)
        saver.close()
    assert not worker.is_alive(), "the run did not finish"
    if errors:
        raise errors[0]

    with HTTPSaver(service.url) as reader:
        state = load_graph(reader, steps=STEPS, payload=payload).get_state(config)
        assert state.values == expected_run(steps=STEPS, payload=payload)
        assert state.tasks == ()
        abandoned = assert_live_path(reader, config, STEPS, log)
    # Resumed from its last checkpoint: the steps before the outage ran once.
    assert all(calls[f"s0{i}"] == 1 for i in range(4)), calls
    assert calls["s04"] <= 2 and all(n == 1 for name, n in calls.items() if name != "s04"), calls
    check = verify(service.url, log)
    check.assert_ok()
    report(
        f"{what}: {len(failures)} failed calls surfaced to the run, every probe answered 503 "
        f"with Retry-After in at most {max(took):.1f}s (request timeout {REQUEST_TIMEOUT:.0f}s), "
        f"outage {outage:.1f}s; the run resumed from its last checkpoint "
        f"({acked_before} acknowledged before the outage) and completed, s04 ran {calls['s04']}x, "
        f"every other step once ({abandoned} unacknowledged checkpoints off the live path); "
        f"{check.figures()}"
    )


@pytest.fixture
def dynoxide(tmp_path: Path) -> Iterator[Dynoxide]:
    d = Dynoxide(tmp_path)
    d.start()
    try:
        yield d
    finally:
        d.stop()


def outage_env(**extra: str) -> dict[str, str]:
    return {
        "SAVER_TABLE": f"saver-outage-{uuid.uuid4().hex[:12]}",
        "SAVER_INIT": "true",
        "SAVER_REQUEST_TIMEOUT": f"{REQUEST_TIMEOUT:.0f}s",
        **extra,
    }


def test_dynamodb_stopped_mid_run(
    spawn_service: Callable[..., ServiceProcess], dynoxide: Dynoxide, tmp_path: Path
) -> None:
    service = spawn_service(outage_env(AWS_ENDPOINT_URL_DYNAMODB=dynoxide.url))
    run_through_outage(
        service,
        what="DynamoDB stopped mid-run (dynoxide killed, restarted on the same port and data)",
        down=dynoxide.stop,
        up=dynoxide.start,
        probe_size=10,
        payload=64,
        tmp_path=tmp_path,
    )


def test_dynamodb_frozen_mid_run(
    spawn_service: Callable[..., ServiceProcess], dynoxide: Dynoxide, tmp_path: Path
) -> None:
    service = spawn_service(outage_env(AWS_ENDPOINT_URL_DYNAMODB=dynoxide.url))
    run_through_outage(
        service,
        what="DynamoDB frozen mid-run (SIGSTOP: connections accepted, never answered)",
        down=dynoxide.freeze,
        up=dynoxide.thaw,
        probe_size=10,
        payload=64,
        tmp_path=tmp_path,
    )


def test_s3_cut_off_mid_run(spawn_service: Callable[..., ServiceProcess], tmp_path: Path) -> None:
    if not os.environ.get("SAVER_BUCKET") or not os.environ.get("AWS_ENDPOINT_URL_S3"):
        pytest.fail("the S3 outage test needs SAVER_BUCKET and AWS_ENDPOINT_URL_S3 (make test-aws)")
    proxy = TcpProxy(os.environ["AWS_ENDPOINT_URL_S3"])
    proxy.start()
    try:
        # Every channel value over 1 KB goes to S3.
        service = spawn_service(
            outage_env(AWS_ENDPOINT_URL_S3=proxy.url, SAVER_OFFLOAD_BYTES="1024")
        )
        # Cut between calls: LocalStack 4.14's S3 answers a PutObject cut
        # mid-body with a 500 ("I/O operation on closed file") and from then
        # on leaves every GetObject of that key hanging, an emulator fault
        # that real S3 does not have and that says nothing about the saver.
        # (The kill -9 tests cut the service's own requests mid-flight.)
        run_through_outage(
            service,
            what="S3 cut off mid-run (offloaded payloads; proxy refusing connections, idle ones cut)",
            down=proxy.stop,
            up=proxy.start,
            probe_size=4096,
            payload=4096,
            tmp_path=tmp_path,
            between_calls=True,
        )
    finally:
        proxy.stop()

