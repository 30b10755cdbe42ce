"""The payment workflow's world, for the crash-resume tests (the client's and e2e's).

A real HTTP server on 127.0.0.1 stands in for the payment API (it counts
charges, and honours an Idempotency-Key as a real one would) and for a shipping
API that answers 429 to its first call; it also records every node execution,
from the test's process or from the workflow processes (workflow_proc.py) the
tests start and kill. Then what every scenario must end with, and the two
halves of a crash: a process killed inside the charge step, and the resume.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from saver_client import HTTPSaver

from support.workflow_proc import STEPS

WORKFLOW = Path(__file__).with_name("workflow_proc.py")
# Bounds for waiting on a workflow process; generous for small CI machines.
PROC_TIMEOUT = 120.0


@dataclass
class FakeApis:
    """Payment and shipping APIs, and a recorder of node executions."""

    charges: list[dict[str, Any]] = field(default_factory=list)
    charge_requests: int = 0
    ship_requests: int = 0
    steps: Counter[str] = field(default_factory=Counter)
    charged: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        apis = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with apis._lock:
                    status, headers, answer = apis._answer(self.path, dict(self.headers), body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def _answer(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, str], Any]:
        if path == "/step":
            self.steps[body["step"]] += 1
            return 200, {}, {}
        if path == "/charge":
            self.charge_requests += 1
            key = headers.get("Idempotency-Key", "")
            for charge in self.charges:
                if key and charge["idempotency_key"] == key:
                    return 200, {}, charge  # as a real payment API does
            charge = {
                "charge_id": f"ch_{len(self.charges) + 1}",
                "order_id": body["order_id"],
                "amount": body["amount"],
                "idempotency_key": key,
            }
            self.charges.append(charge)
            self.charged.set()
            return 200, {}, charge
        if path == "/ship":
            self.ship_requests += 1
            if self.ship_requests == 1:
                return 429, {"Retry-After": "1"}, {"error": "slow down"}
            return 200, {}, {"tracking": f"trk_{body['order_id']}"}
        return 404, {}, {"error": "no such endpoint"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class WorkflowProcess:
    """workflow_proc.py in a process of its own, its stdout read line by line."""

    def __init__(self, saver_url: str, api_url: str, thread_id: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(WORKFLOW),
                "--saver",
                saver_url,
                "--api",
                api_url,
                "--thread",
                thread_id,
                "--order",
                thread_id,
                *args,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.events: list[tuple[str, Any]] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._lines.put(raw.decode())
        self._lines.put(None)

    def wait_for(self, event: str) -> Any:
        """The data of the next `event` line; fails if the process ends first."""
        while True:
            try:
                line = self._lines.get(timeout=PROC_TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"no {event!r} from the workflow in {PROC_TIMEOUT}s") from None
            if line is None:
                raise AssertionError(f"the workflow ended before {event!r}:\n{self.stderr()}")
            name, _, data = line.strip().partition(" ")
            self.events.append((name, json.loads(data) if data else None))
            if name == event:
                return self.events[-1][1]

    def kill(self) -> None:
        """kill -9: no finally block, no atexit, no flush."""
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=PROC_TIMEOUT) == -signal.SIGKILL

    def finish(self) -> Any:
        """Wait for the run to end well; return its final state."""
        done = self.wait_for("done")
        assert self.proc.wait(timeout=PROC_TIMEOUT) == 0, self.stderr()
        return done

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")[-4000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=PROC_TIMEOUT)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def config_of(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def new_thread() -> str:
    return f"order-{uuid.uuid4()}"


# -- what every scenario must end with -------------------------------------------------

FINAL_LOG = [
    "validated",
    "reserved",
    "priced 4200",
    "charged ch_1",
    "shipped trk_{order}",
    "notified",
    "archived",
]


def assert_done(state: dict[str, Any], thread_id: str) -> None:
    assert state["log"] == [line.format(order=thread_id) for line in FINAL_LOG]
    assert state["receipt"]["charge_id"] == "ch_1"
    assert state["tracking"] == f"trk_{thread_id}"


def assert_exactly_one_charge(apis: FakeApis, thread_id: str) -> None:
    assert len(apis.charges) == 1, apis.charges
    assert apis.charges[0]["order_id"] == thread_id
    assert apis.charges[0]["amount"] == 4200


def assert_tree_after_recovery(saver: HTTPSaver, thread_id: str) -> None:
    """The tree shows the failed attempt at step 5 and the live path through the
    successful run: input, the start, then one checkpoint after each step."""
    tree = saver.tree(thread_id)
    path = saver.path(thread_id)
    assert [n.step for n in path] == list(range(-1, 8))
    assert [n.source for n in path] == ["input"] + ["loop"] * 8
    assert all(n.on_live_path and n.checkpoint_ns == "" and not n.orphan for n in path)
    assert path[-1] == tree.head and tree.head.status == "ok"
    assert tree.live_path == tuple(path)
    for parent, child in zip(path, path[1:], strict=False):
        assert child.parent_id == parent.checkpoint_id

    # Shipping (the step after checkpoint 4) failed once, then ran again from
    # the same checkpoint: a failed attempt that was retried, on the live path.
    after_charge = path[5]
    assert after_charge.step == 4
    assert (after_charge.status, after_charge.has_error) == ("retried", True)
    assert tree.failures == (after_charge,)
    assert [n.status for n in path] == ["ok"] * 5 + ["retried"] + ["ok"] * 3
    assert saver.children(thread_id, after_charge.checkpoint_id) == [path[6]]
    assert saver.path(thread_id, after_charge.checkpoint_id) == path[:6]

    # Nothing was left behind: one leaf, the head, and no abandoned branch.
    assert saver.leaves(thread_id) == [tree.head]
    assert saver.abandoned(thread_id) == []
    assert len(tree.nodes) == 9  # the root namespace only: no subgraphs here

    ctx = saver.resume_context(thread_id)
    assert ctx.text.splitlines() == [
        "step -1 · input",
        *[f"step {i}" for i in range(0, 4)],
        "step 4 · error, retried",
        *[f"step {i}" for i in range(5, 8)],
    ]
    drawn = ctx.drawing.splitlines()
    assert drawn[5] == f"{after_charge.checkpoint_id} · step 4 · loop · error, retried"
    assert drawn[-1] == f"{tree.head.checkpoint_id} · step 7 · loop · ok · head"
    assert "abandoned" not in ctx.drawing


def kill_after_charge(
    start: Callable[..., WorkflowProcess],
    saver: HTTPSaver,
    apis: FakeApis,
    thread_id: str,
    key_mode: str,
) -> str:
    """Run the workflow in a process killed -9 inside step 4: after the payment API
    took the charge and the helper stored it, before the step's writes were saved.
    Returns the idempotency key the charge ran under."""
    proc = start(
        saver.url,
        apis.url,
        thread_id,
        "--start",
        "--key-mode",
        key_mode,
        "--block",
        "after-charge",
    )
    charged = proc.wait_for("charged")  # printed once the helper returned
    assert apis.charged.is_set()  # the payment API recorded it before that
    proc.kill()

    key = charged["key"]
    assert charged["receipt"]["charge_id"] == "ch_1"
    if key_mode == "order":
        assert key == f"charge-{thread_id}"
    else:
        assert key.startswith("lg:") and key.endswith(":build_workflow.<locals>.charge_card#1")
    assert apis.steps == {s: 1 for s in STEPS[:4]}
    assert_exactly_one_charge(apis, thread_id)

    # Step 4's writes never reached the saver: the thread is still before it.
    tup = saver.get_tuple(config_of(thread_id))
    assert tup is not None and tup.metadata["step"] == 3
    assert tup.pending_writes == []
    # The ledger has the charge's result.
    claim = saver.claim(key)
    assert (claim.state, claim.attempt, claim.result) == ("completed", 1, charged["receipt"])
    return str(key)


def resume_to_the_end(
    start: Callable[..., WorkflowProcess],
    saver_url: str,
    apis: FakeApis,
    thread_id: str,
    key_mode: str,
) -> WorkflowProcess:
    proc = start(saver_url, apis.url, thread_id, "--key-mode", key_mode)
    final = proc.finish()
    assert_done(final, thread_id)
    # The resumed process hit the shipping API's 429 once and resumed again.
    assert [e for e, _ in proc.events] == ["failed", "done"]
    return proc
