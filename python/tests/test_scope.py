"""Retention scope: the client names a thread's scope, the service turns it into expiry."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from saver_client import HTTPSaver

# The test service runs with the default policy: persistent threads never
# expire, session threads expire 12 hours after they are written.
SESSION_TTL = 12 * 3600


def _stored(url: str, thread_id: str) -> dict[str, Any]:
    r = httpx.get(f"{url}/v1/threads/{thread_id}/checkpoint", headers={"Accept": "application/json"})
    r.raise_for_status()
    body: dict[str, Any] = r.json()
    return body


def _put(saver: HTTPSaver, thread_id: str, **configurable: Any) -> None:
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **configurable}}
    saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})


@pytest.mark.parametrize(
    ("saver_scope", "config_scope", "want"),
    [
        (None, None, "persistent"),
        ("session", None, "session"),
        ("persistent", "session", "session"),
        ("session", "persistent", "persistent"),
    ],
)
def test_scope_sets_expiry(
    saver_url: str, thread_id: str, saver_scope: Any, config_scope: Any, want: str
) -> None:
    extra = {"saver_scope": config_scope} if config_scope else {}
    with HTTPSaver(saver_url, scope=saver_scope) as saver:
        before = int(time.time())
        _put(saver, thread_id, **extra)
        after = int(time.time())
    stored = _stored(saver_url, thread_id)
    assert stored["scope"] == want
    if want == "persistent":
        assert stored["expires_at"] == 0
    else:
        assert before + SESSION_TTL <= stored["expires_at"] <= after + SESSION_TTL


def test_unknown_scope_is_refused(saver_url: str, thread_id: str) -> None:
    with pytest.raises(ValueError, match="scope"):
        HTTPSaver(saver_url, scope="weekly")  # type: ignore[arg-type]
    with HTTPSaver(saver_url) as saver, pytest.raises(ValueError, match="scope"):
        _put(saver, thread_id, saver_scope="forever")
