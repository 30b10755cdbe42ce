"""The saver service as a process the tests own: started, killed, restarted on its db.

Also the small waits around processes and ports that the tests share.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

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


def saver_binary() -> str:
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
