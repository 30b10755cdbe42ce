"""LangGraph Agent Server wiring: `checkpointer.path` in langgraph.json.

Agent Server (LangSmith deployments, `langgraph dev`) takes a custom
checkpointer as the import path of an async context manager that yields a
`BaseCheckpointSaver`; it enters it at start-up and exits it at shutdown::

    {
      "dependencies": [".", "saver-client"],
      "graphs": {"agent": "./src/agent/graph.py:graph"},
      "checkpointer": {"path": "./src/agent/checkpointer.py:checkpointer"}
    }

with `src/agent/checkpointer.py` holding one line::

    from saver_client.agent_server import checkpointer

The saver is configured from the environment: `SAVER_URL`, `SAVER_API_KEY`,
`SAVER_SCOPE` (`session` or `persistent`; unset takes the service's default)
and `SAVER_RETRY_BUDGET` (seconds a request keeps being retried while the
service is unreachable or answers 503; default 60, longer than a rolling
restart of the service takes).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import AsyncIterator
from typing import Any

from ._transport import RetryPolicy
from .saver import HTTPSaver

__all__ = ["RETRY_BUDGET_ENV", "checkpointer", "retry_policy_from_env"]

SCOPE_ENV = "SAVER_SCOPE"
RETRY_BUDGET_ENV = "SAVER_RETRY_BUDGET"
# A redeploy or rolling restart of the service (a new process, its store
# opened, the load balancer's health check passing) takes tens of seconds;
# a run that gave up after the library default (a few seconds) would fail
# although nothing was lost.
DEFAULT_RETRY_BUDGET = 60.0
# Agent Server puts the checkpointer section of langgraph.json here.
CHECKPOINTER_CONFIG_ENV = "LANGGRAPH_CHECKPOINTER"

logger = logging.getLogger("saver_client")


def retry_policy_from_env(environ: Any = None) -> RetryPolicy:
    """The retry policy for a server: retry for `SAVER_RETRY_BUDGET` seconds.

    The budget, not a number of attempts, bounds the retries: tries go on,
    backing off up to 5 s apart (or as the service's Retry-After says), until
    one would start past the budget.
    """
    env = os.environ if environ is None else environ
    raw = (env.get(RETRY_BUDGET_ENV) or "").strip()
    budget = DEFAULT_RETRY_BUDGET
    if raw:
        try:
            budget = float(raw)
        except ValueError:
            budget = math.nan
        if not math.isfinite(budget) or budget < 0:
            raise ValueError(
                f"{RETRY_BUDGET_ENV}={raw!r}: want a number of seconds, 0 or more "
                f"(default {DEFAULT_RETRY_BUDGET:g})"
            )
    # Enough attempts that the budget is what stops them (at least one try).
    return RetryPolicy(max_attempts=max(1, math.ceil(budget / 0.1) + 1), max_delay=budget)


def _note_ttl(environ: Any = None) -> None:
    env = os.environ if environ is None else environ
    try:
        conf = json.loads(env.get(CHECKPOINTER_CONFIG_ENV) or "null")
    except ValueError:
        return
    if isinstance(conf, dict) and conf.get("ttl"):
        logger.info(
            "checkpointer.ttl in langgraph.json is Agent Server's thread TTL, applied by its "
            "own thread sweeper (which calls the saver's delete_thread and prune); the saver "
            "is not told of it. To have the saver itself expire a thread's data, set %s=session "
            "here and SAVER_SESSION_TTL on the service.",
            SCOPE_ENV,
        )


@contextlib.asynccontextmanager
async def checkpointer(**kwargs: Any) -> AsyncIterator[HTTPSaver]:
    """Yield an `HTTPSaver` for Agent Server and close its connections on exit.

    Keyword arguments go to `HTTPSaver`; the environment fills the rest. The
    service is checked once at start-up, so a wrong URL or key fails the
    deployment at once instead of its first run (after the retry budget when
    the service is down).
    """
    kwargs.setdefault("scope", os.environ.get(SCOPE_ENV) or None)
    if "retry" not in kwargs:
        kwargs["retry"] = retry_policy_from_env()
    _note_ttl()
    async with HTTPSaver(**kwargs) as saver:
        await saver.aping()
        logger.info(
            "saver checkpointer ready at %s (requests retried for %gs)",
            saver.url,
            saver._transport.retry.max_delay,
        )
        try:
            yield saver
        finally:
            logger.info("saver checkpointer closing")
