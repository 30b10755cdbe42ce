"""LangGraph Agent Server wiring: `checkpointer.path` in langgraph.json.

Agent Server (LangSmith deployments, `langgraph dev`) takes a custom
checkpointer as the import path of an async context manager that yields a
`BaseCheckpointSaver`; it enters it at start-up and exits it at shutdown::

    {
      "graphs": {"agent": "./src/agent/graph.py:graph"},
      "checkpointer": {"path": "./src/agent/checkpointer.py:checkpointer"}
    }

with `src/agent/checkpointer.py` holding one line::

    from saver_client.agent_server import checkpointer

The saver is configured from the environment: `SAVER_URL`, `SAVER_API_KEY`
and `SAVER_SCOPE` (`session` or `persistent`; unset takes the service's
default).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from .saver import HTTPSaver

__all__ = ["checkpointer"]

SCOPE_ENV = "SAVER_SCOPE"

logger = logging.getLogger("saver_client")


@contextlib.asynccontextmanager
async def checkpointer(**kwargs: Any) -> AsyncIterator[HTTPSaver]:
    """Yield an `HTTPSaver` for Agent Server and close its connections on exit.

    Keyword arguments go to `HTTPSaver`; the environment fills the rest. The
    service is checked once at start-up, so a wrong URL or key fails the
    deployment at once instead of its first run.
    """
    kwargs.setdefault("scope", os.environ.get(SCOPE_ENV) or None)
    async with HTTPSaver(**kwargs) as saver:
        await saver.aping()
        logger.info("saver checkpointer ready at %s", saver.url)
        try:
            yield saver
        finally:
            logger.info("saver checkpointer closing")
