"""`langgraph dev` serving this example, its checkpoints and its Store in a live saver.

The real Agent Server (langgraph-cli[inmem], pinned in requirements-dev.txt;
`LANGGRAPH_DEV` names its executable) runs this folder's langgraph.json,
which names the saver as both the checkpointer and the store. The test drives
it through the SDK, the store API and a run of the graph, checks from the
service's side (HTTPStore, HTTPSaver on the service's URL) that everything
went to the saver and not to Agent Server's own storage, then restarts the
service on the same port and data and checks that Agent Server still reads
all of it and runs again.

langgraph dev runs in a copy of this folder, so its `.langgraph_api/` (the
thread registry of the in-memory runtime) lands in the test's temporary
folder and not in the checkout; the client comes from its venv. Offline: no
tracing, no CLI analytics, no version check against the package index, and
no licence key, so no metadata is reported anywhere.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from saver_client import HTTPSaver, HTTPStore

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# Generous for small CI machines: Agent Server imports a lot at start-up.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
POLL_INTERVAL = 0.05

OFFLINE_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
}
# Nothing that would make Agent Server report to LangSmith or check a licence.
UNSET_ENV = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGGRAPH_CLOUD_LICENSE_KEY",
    "LANGSMITH_CONTROL_PLANE_API_KEY",
)


def _langgraph() -> str:
    path = os.environ.get("LANGGRAPH_DEV")
    if not path or not os.access(path, os.X_OK):
        raise pytest.UsageError(
            "set LANGGRAPH_DEV to the executable of langgraph-cli with its inmem extra "
            "(make test-agent-server does)"
        )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait(what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited with {proc.returncode}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not ready after {START_TIMEOUT}s:\n{_tail(log)}")
        time.sleep(POLL_INTERVAL)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def _stop(proc: subprocess.Popen[bytes] | None, sig: signal.Signals = signal.SIGTERM) -> None:
    """Stop a process the test started, and whatever it started in its group."""
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT)


@dataclass
class Service:
    """The saver service on a loopback port and data folder, restartable on both."""

    workdir: Path
    port: int = 0  # the one the first start got
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.workdir / "saver.log"

    def start(self) -> None:
        binary = os.environ.get("SAVER_BIN") or str(REPO / "bin" / "saver")
        addr_file = self.workdir / "addr"
        addr_file.unlink(missing_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [binary, "serve", "-addr", f"127.0.0.1:{self.port}", "-addr-file", str(addr_file)]
                + ["-db", str(self.workdir / "saver.db")],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

        def ready() -> bool:
            if not self.port:
                # A half-written file has no port yet: read it again next time.
                addr = addr_file.read_text().strip() if addr_file.exists() else ""
                if not addr.rpartition(":")[2].isdigit():
                    return False
                self.port = int(addr.rpartition(":")[2])
            return _answers(f"{self.url}/readyz")

        _wait("saver", ready, self.proc, self.log)

    def kill(self) -> None:
        """kill -9, as in a crash."""
        _stop(self.proc, signal.SIGKILL)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    svc = Service(tmp_path / "saver")
    svc.workdir.mkdir()
    svc.start()
    try:
        yield svc
    finally:
        svc.kill()


@pytest.fixture
def agent_server(service: Service, tmp_path: Path) -> Iterator[str]:
    """`langgraph dev` on this example with SAVER_URL at the service; its URL."""
    langgraph = _langgraph()
    folder = tmp_path / "agent_server"
    # Without a .env of someone's, which would send it to another service.
    skip = shutil.ignore_patterns("__pycache__", ".langgraph_api", ".env", "test_*")
    shutil.copytree(HERE, folder, ignore=skip)
    port = _free_port()
    env = {
        k: v for k, v in os.environ.items() if k not in UNSET_ENV and not k.startswith("SAVER_")
    }
    env.update(OFFLINE_ENV, SAVER_URL=service.url)
    log = tmp_path / "langgraph-dev.log"
    with open(log, "wb") as out:
        # --no-reload: one process, and nothing watching the files.
        proc = subprocess.Popen(
            [langgraph, "dev", "--no-browser", "--no-reload"]
            + ["--host", "127.0.0.1", "--port", str(port)],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait("langgraph dev", lambda: _answers(f"{url}/ok"), proc, log)
        yield url
    finally:
        _stop(proc)


async def _checkpoints(url: str, thread_id: str) -> list[Any]:
    """The thread's checkpoints, read from the service itself."""
    async with HTTPSaver(url) as saver:
        return [t async for t in saver.alist({"configurable": {"thread_id": thread_id}})]


async def _texts(url: str, namespace: list[str]) -> list[str]:
    """The texts of the memories in a namespace, read from the service itself."""
    async with HTTPStore(url) as store:
        return sorted(item.value["text"] for item in await store.asearch(tuple(namespace)))


@pytest.mark.asyncio
async def test_langgraph_dev_keeps_memories_and_checkpoints_in_the_saver_across_its_restart(
    service: Service, agent_server: str
) -> None:
    client = get_client(url=agent_server)
    user = uuid.uuid4().hex
    memories = ["users", user, "memories"]

    # Agent Server's store API is the saver's Store.
    await client.store.put_item(memories, "tea", {"text": "likes green tea"})
    await client.store.put_item(["users", user, "profile"], "name", {"text": "Ada"})
    item = await client.store.get_item(memories, "tea")
    assert item is not None and item["value"] == {"text": "likes green tea"}
    found = await client.store.search_items(["users", user])
    assert sorted(i["key"] for i in found["items"]) == ["name", "tea"]
    listed = await client.store.list_namespaces(prefix=["users", user])
    assert sorted(listed["namespaces"]) == [memories, ["users", user, "profile"]]
    assert await _texts(service.url, memories) == ["likes green tea"]

    # A run writes a memory from inside the graph and reads the user's back,
    # the one put through the SDK included.
    two = ["climbs mountains", "likes green tea"]
    thread_id = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(thread_id, "agent", input={"user": user, "note": two[0]})
    assert out["memories"] == two
    found = await client.store.search_items(memories)
    assert sorted(i["value"]["text"] for i in found["items"]) == two
    assert await _texts(service.url, memories) == two
    # Its checkpoints are the saver's.
    stored = await _checkpoints(service.url, thread_id)
    assert stored, "no checkpoint of the run in the saver"
    assert stored[0].checkpoint["channel_values"]["memories"] == two

    # The service crashes and comes back on the same port and data; Agent
    # Server, still up, reads all of it again and runs on.
    service.kill()
    service.start()
    item = await client.store.get_item(memories, "tea")
    assert item is not None and item["value"] == {"text": "likes green tea"}
    state = await client.threads.get_state(thread_id)
    assert state["values"]["memories"] == two
    three = [*two, "reads novels"]
    out = await client.runs.wait(thread_id, "agent", input={"user": user, "note": three[2]})
    assert out["memories"] == three
    assert await _texts(service.url, memories) == three
    assert len(await _checkpoints(service.url, thread_id)) > len(stored)
