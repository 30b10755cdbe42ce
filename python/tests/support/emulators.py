"""Outages: a private DynamoDB emulator that can be stopped, started again and frozen."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from support import REPO
from support.processes import STOP_TIMEOUT, free_port, wait_until

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
