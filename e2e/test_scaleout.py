"""Three replicas on one DynamoDB table and bucket, one of them crashing.

The README says that several stateless replicas may serve one table and
bucket; this runs three. Concurrent graph runs go through a proxy that sends
every request to a replica picked at random (the clients send
`Connection: close`, so each request is a connection of its own), with
conditional puts on (`detect_conflicts=True`) and a side effect in every
node through the idempotency ledger. Replica 0 is killed with SIGKILL and
restarted again and again mid-run, so its patch cache is cold after each
start; replica 1 keeps its cache warm; replica 2 has none
(`SAVER_PATCH_CACHE_BYTES=0`), so it stores values whole and reads the
patch chains the others wrote.

Checked: every acknowledged write is read back whole from every replica;
each run's history (its live path, state by state) equals that of the same
run on InMemorySaver; every side effect ran exactly once; and patches were
written, so that the chains the replicas read cross replicas.

It runs when the suite runs on the dynamodb store (make test-aws, in make
test) with SAVER_SCALEOUT_KILLS=3 kills under SAVER_SCALEOUT_RUNS=6 runs;
make soak runs 20 kills under 16 runs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import operator
import os
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import httpx
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.types import StateSnapshot
from typing_extensions import TypedDict

from saver_client import HTTPSaver

from support.compare import history_sig
from support.acklog import AckLog, assert_live_path, verify
from support.figures import dynamodb_only, report
from support.load import FAN, chain_names, drive, wire_chain
from support.processes import ServiceProcess, wait_until
from support.proxy import SpreadProxy
from support.recording import RecordingSaver

pytestmark = dynamodb_only

ROUNDS = int(os.environ.get("SAVER_SCALEOUT_KILLS", "3"))
RUNS = int(os.environ.get("SAVER_SCALEOUT_RUNS", "6"))
STEPS = 8
LOAD_TIMEOUT = 180.0
# The first message is over the 4 KiB below which values are stored whole,
# and each step adds one, so that every put brings a value that grew.
FIRST_MESSAGE = 6 << 10
MESSAGE = 1 << 10


class State(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]
    receipts: Annotated[list[str], operator.add]


# once(name, effect) runs a node's side effect: through the ledger on the
# service, plainly on InMemorySaver.
Once = Callable[[str, Callable[[], str]], str]


def scaleout_graph(checkpointer: Any, once: Once, effects: Counter[tuple[str, str]]) -> Any:
    """The chain-with-fan-out of support.load.load_graph, each node appending a
    message and the receipt of a side effect that counts itself in
    `effects` under (thread, node)."""
    lock = threading.Lock()

    def node(name: str) -> Callable[[State, RunnableConfig], State]:
        def run(state: State, config: RunnableConfig) -> State:
            thread = str(config["configurable"]["thread_id"])

            def effect() -> str:
                with lock:
                    effects[(thread, name)] += 1
                return f"paid:{name}"

            receipt = once(name, effect)
            return {"messages": [(name * MESSAGE)[:MESSAGE]], "receipts": [receipt]}

        return run

    g = StateGraph(State)
    for n in [*chain_names(STEPS), *FAN]:
        g.add_node(n, node(n))  # type: ignore[call-overload]
    wire_chain(g, STEPS)
    return g.compile(checkpointer=checkpointer)


def first_input() -> State:
    return {"messages": [("in" * FIRST_MESSAGE)[:FIRST_MESSAGE]]}


def live_path(history: list[StateSnapshot]) -> list[StateSnapshot]:
    """The snapshots from the newest back to the root, following parents:
    attempts a crash abandoned are left out."""
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    path = []
    node = history[0] if history else None
    while node is not None:
        path.append(node)
        parent = (node.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        node = by_id.get(parent) if parent else None
    return path


def reference_history() -> list[dict[str, Any]]:
    """The history of one run on InMemorySaver, in comparable form."""
    graph = scaleout_graph(InMemorySaver(), lambda _, effect: effect(), Counter())
    config = {"configurable": {"thread_id": "reference"}}
    graph.invoke(first_input(), config, durability="sync")
    return history_sig(live_path(list(graph.get_state_history(config))))


class Load:
    """`runs` workers running graph threads to completion one after another
    through `url`, resuming after failures, until told to stop."""

    def __init__(self, url: str, log: AckLog, runs: int) -> None:
        self.url = url
        self.log = log
        self.effects: Counter[tuple[str, str]] = Counter()
        self.stop = threading.Event()
        # Cleared while the test reads everything back.
        self.admit = threading.Event()
        self.admit.set()
        self.errors: list[BaseException] = []
        self.completed: list[tuple[Any, int]] = []  # (config, resumes)
        self._lock = threading.Lock()
        self._workers = [threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(runs)]

    def start(self) -> None:
        for w in self._workers:
            w.start()

    def _work(self, i: int) -> None:
        saver = RecordingSaver(
            self.url, self.log, detect_conflicts=True, headers={"Connection": "close"}
        )

        def once(name: str, effect: Callable[[], str]) -> str:
            # The key is derived from the running task: the same when the
            # step runs again after a failure, on whichever replica.
            return saver.idempotent(name=name)(effect)()

        graph = scaleout_graph(saver, once, self.effects)
        n = 0
        try:
            while not self.stop.is_set():
                self.admit.wait(LOAD_TIMEOUT)
                config = {"configurable": {"thread_id": f"scale-{i}-{n}-{uuid.uuid4().hex[:8]}"}}
                resumes = drive(graph, config, first_input())
                with self._lock:
                    self.completed.append((config, resumes))
                n += 1
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            saver.close()

    def finish(self) -> None:
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


def _signed(url: str, target: str, body: bytes) -> dict[str, str]:
    """Headers of a DynamoDB JSON request signed with SigV4 from the
    environment's credentials."""
    region = os.environ.get("AWS_REGION") or "us-east-1"
    key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    headers = {
        "content-type": "application/x-amz-json-1.0",
        "host": urlsplit(url).netloc,
        "x-amz-date": stamp,
        "x-amz-target": target,
    }
    names = ";".join(sorted(headers))
    canonical = "\n".join(
        ["POST", "/", "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "", names,
         hashlib.sha256(body).hexdigest()]
    )  # fmt: skip
    scope = f"{stamp[:8]}/{region}/dynamodb/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (stamp[:8], region, "dynamodb", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={key}/{scope}, SignedHeaders={names}, Signature={signature}"
    )
    return headers


def patched_items() -> int:
    """Items of the table that hold a patch on an earlier version of their
    value (dynamo/patched.go), counted with a Scan."""
    url = os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    body: dict[str, Any] = {
        "TableName": os.environ["SAVER_TABLE"],
        "Select": "COUNT",
        "FilterExpression": "attribute_exists(#p)",
        "ExpressionAttributeNames": {"#p": "patch"},
    }
    total = 0
    while True:
        data = json.dumps(body).encode()
        resp = httpx.post(url, content=data, headers=_signed(url, "DynamoDB_20120810.Scan", data))
        assert resp.status_code == 200, resp.text
        out = resp.json()
        total += int(out["Count"])
        if "LastEvaluatedKey" not in out:
            return total
        body["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def test_three_replicas_one_killed(
    spawn_service: Callable[..., ServiceProcess], tmp_path: Path
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    replicas = [
        spawn_service(),  # killed and restarted: its cache is cold after each start
        spawn_service(),  # warm throughout
        spawn_service({"SAVER_PATCH_CACHE_BYTES": "0"}),  # no cache: values whole
    ]
    patched_before = patched_items()
    proxy = SpreadProxy([r.url for r in replicas], seed)
    proxy.start()
    log = AckLog(tmp_path / "acks.jsonl")
    load = Load(proxy.url, log, RUNS)
    started = time.monotonic()
    load.start()
    victim = replicas[0]
    restarts: list[float] = []
    try:
        for _ in range(ROUNDS):
            target = log.count() + rng.randint(20, 80)
            wait_until(f"the load to reach {target} acks", load.progressed(target), LOAD_TIMEOUT)
            victim.kill()
            t0 = time.monotonic()
            victim.restart()
            restarts.append(time.monotonic() - t0)
            # The restarted replica, its cache cold, reads everything back.
            load.admit.clear()
            check = verify(victim.url, log)
            load.admit.set()
            check.assert_ok()
        load.finish()
    finally:
        load.stop.set()
        load.admit.set()
        proxy.stop()
    log.close()

    # Every acknowledged write, read back whole from every replica.
    checks = [verify(r.url, log) for r in replicas]
    for check in checks:
        check.assert_ok()
    assert len({(c.recovered, c.unobservable) for c in checks}) == 1, [c.figures() for c in checks]
    assert checks[0].acked > 0

    # Each run's history equals the same run's on InMemorySaver, read from
    # every replica; each step once on the live path.
    want = reference_history()
    abandoned = 0
    for r in replicas:
        with HTTPSaver(r.url) as reader:
            graph = scaleout_graph(reader, lambda _, effect: effect(), Counter())
            for config, _ in load.completed:
                got = history_sig(live_path(list(graph.get_state_history(config))))
                assert got == want, f"{config} read from {r.url}: history differs from InMemorySaver's"
                if r is replicas[2]:
                    abandoned += assert_live_path(reader, config, STEPS, log)

    # Every side effect exactly once.
    nodes = [*chain_names(STEPS), *FAN]
    want_effects = {(c["configurable"]["thread_id"], n) for c, _ in load.completed for n in nodes}
    assert set(load.effects) == want_effects, "side effects of runs that never completed, or missing"
    repeated = {k: n for k, n in load.effects.items() if n != 1}
    assert not repeated, f"side effects run more than once: {list(repeated.items())[:5]}"

    patches = patched_items() - patched_before
    assert patches > 0, "no value was stored as a patch: the replicas' caches were never used"
    runs = len(load.completed)
    report(
        f"scale-out: 3 replicas on one table and bucket, {ROUNDS} kill -9s of one under {RUNS} "
        f"concurrent graph runs spread at random per request (seed {seed}), conditional puts: "
        f"{checks[0].figures()}, read back from each of the 3 replicas alike; {runs} runs completed, "
        f"{sum(1 for _, r in load.completed if r)} resumed, each history equal to InMemorySaver's, "
        f"{abandoned} unacknowledged checkpoints left off a live path; side effects "
        f"{sum(load.effects.values())} for {len(want_effects)} steps, 0 lost, 0 twice; "
        f"{patches} values stored as patches; requests per replica "
        f"{[proxy.served[r.port] for r in replicas]}; restart to ready {max(restarts):.2f}s at most; "
        f"{time.monotonic() - started:.1f}s in all"
    )
