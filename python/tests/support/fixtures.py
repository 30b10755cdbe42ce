"""Fixtures: the saver service under test, for the client's tests and the service's (e2e/).

By default each session starts the binary named by `$SAVER_BIN` on a temporary
database. When `$SAVER_URL` is set, the tests use that running service instead
and start nothing, so the same tests can run against any deployment.

Both suites' conftest.py load this module as a plugin (`pytest_plugins`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from saver_client import HTTPSaver

from support.figures import summarize
from support.payments import FakeApis, WorkflowProcess
from support.processes import ServiceProcess, external_url, saver_binary


@pytest.fixture(scope="session")
def saver_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the service under test, started for the session unless given."""
    if url := external_url():
        yield url.rstrip("/")
        return
    service = ServiceProcess(saver_binary(), tmp_path_factory.mktemp("saver"))
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
        service = ServiceProcess(saver_binary(), tmp_path / f"svc{len(started)}", dict(env or {}))
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


@pytest.fixture
def apis() -> Iterator[FakeApis]:
    """The payment and shipping APIs of the payment workflow (support/payments.py)."""
    a = FakeApis()
    yield a
    a.close()


@pytest.fixture
def workflows() -> Iterator[Callable[..., WorkflowProcess]]:
    """`start(saver_url, api_url, thread_id, *args)` runs workflow_proc.py in a process of its own."""
    started: list[WorkflowProcess] = []

    def start(saver_url: str, api_url: str, thread_id: str, *args: str) -> WorkflowProcess:
        started.append(WorkflowProcess(saver_url, api_url, thread_id, *args))
        return started[-1]

    yield start
    for p in started:
        p.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # What the reliability tests measured (support/figures.py).
    summarize(terminalreporter)
