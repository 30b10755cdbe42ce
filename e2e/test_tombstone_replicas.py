"""Deleted threads stay deleted across replicas (LangGraph issue 7206): two
services on one DynamoDB table, one deletes the thread while a run on the
other is inside a node, and the run's late writes are refused there (the
same on one service: python/tests/test_tombstones.py).
"""

from __future__ import annotations

from collections.abc import Callable

from saver_client import HTTPSaver

from support.figures import dynamodb_only
from support.processes import ServiceProcess
from support.tombstones import check_late_writes


@dynamodb_only
def test_replicas(spawn_service: Callable[..., ServiceProcess], thread_id: str) -> None:
    """Two services on one table: one deletes, the other gets the late writes."""
    a, b = spawn_service(), spawn_service()
    with HTTPSaver(a.url) as on_a, HTTPSaver(b.url) as on_b:
        check_late_writes(on_a, on_b, thread_id)
        check_late_writes(on_b, on_a, thread_id + "-2")
