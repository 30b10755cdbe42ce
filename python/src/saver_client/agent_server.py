"""LangGraph Agent Server wiring: `checkpointer.path` and `store.path` in langgraph.json.

Agent Server (LangSmith deployments, `langgraph dev`) takes a custom
checkpointer and a custom store as import paths of async context managers
that yield a `BaseCheckpointSaver` and a `BaseStore`; it enters them at
start-up and exits them at shutdown::

    {
      "dependencies": [".", "saver-client"],
      "graphs": {"agent": "./src/agent/graph.py:graph"},
      "checkpointer": {"path": "./src/agent/checkpointer.py:checkpointer"},
      "store": {"path": "./src/agent/store.py:store"}
    }

with `src/agent/checkpointer.py` holding one line::

    from saver_client.agent_server import checkpointer

and `src/agent/store.py` one line too::

    from saver_client.agent_server import store

Both are configured from the environment: `SAVER_URL`, `SAVER_API_KEY`,
`SAVER_SCOPE` (the checkpointer's: `session` or `persistent`; unset takes
the service's default) and `SAVER_RETRY_BUDGET` (seconds a request keeps
being retried while the service is unreachable or answers 503; default 60,
longer than a rolling restart of the service takes). The store also reads
`index` and `ttl` from the `store` section of langgraph.json, which Agent
Server does not hand to a custom store itself.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import math
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from ._transport import RetryPolicy
from .saver import HTTPSaver
from .store import HTTPStore

__all__ = [
    "RETRY_BUDGET_ENV",
    "checkpointer",
    "retry_policy_from_env",
    "store",
    "store_config_from_env",
]

SCOPE_ENV = "SAVER_SCOPE"
RETRY_BUDGET_ENV = "SAVER_RETRY_BUDGET"
# A redeploy or rolling restart of the service (a new process, its store
# opened, the load balancer's health check passing) takes tens of seconds;
# a run that gave up after the library default (a few seconds) would fail
# although nothing was lost.
DEFAULT_RETRY_BUDGET = 60.0
# Agent Server puts the checkpointer section of langgraph.json here.
CHECKPOINTER_CONFIG_ENV = "LANGGRAPH_CHECKPOINTER"
# And the store section here.
STORE_CONFIG_ENV = "LANGGRAPH_STORE"

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


def store_config_from_env(environ: Any = None) -> dict[str, Any]:
    """`HTTPStore`'s `index` and `ttl` from langgraph.json's `store` section.

    Agent Server calls a custom store's factory without arguments, so the
    section's `index` and `ttl` (the same keys as for its built-in store)
    are read here from `LANGGRAPH_STORE`, where it puts the section. `embed`
    names the embeddings as LangGraph does: `"provider:model"` (LangChain's
    `init_embeddings`, which needs `langchain` and the provider's package
    among the dependencies) or `"path/to/file.py:name"` (a function or
    `Embeddings` in a file, relative to the working directory).
    """
    env = os.environ if environ is None else environ
    raw = env.get(STORE_CONFIG_ENV) or "null"
    try:
        conf = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{STORE_CONFIG_ENV} is not JSON: {e}") from None
    if not isinstance(conf, Mapping):
        return {}
    out: dict[str, Any] = {}
    if index := conf.get("index"):
        index = dict(index)
        if isinstance(index.get("embed"), str) and ".py:" in index["embed"]:
            index["embed"] = _load_from_file(index["embed"])
        out["index"] = index
    if ttl := conf.get("ttl"):
        out["ttl"] = {k: v for k, v in ttl.items() if k in ("default_ttl", "refresh_on_read")}
        if ttl.get("sweep_interval_minutes"):
            logger.info(
                "store.ttl.sweep_interval_minutes in langgraph.json is not the client's to "
                "apply: the service never returns an expired item, and reclaims them itself "
                "(the embedded store's SAVER_SWEEP_EVERY, DynamoDB's TTL)"
            )
    return out


def _load_from_file(spec: str) -> Any:
    path, name = spec.rsplit(":", 1)
    module_name = f"saver_store_embed_{Path(path).stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if not Path(path).is_file() or module_spec is None or module_spec.loader is None:
        raise ValueError(f"cannot load the embedding {spec!r}: no such file")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    try:
        return getattr(module, name)
    except AttributeError:
        raise ValueError(f"cannot load the embedding {spec!r}: the file has no {name!r}") from None


@contextlib.asynccontextmanager
async def store(**kwargs: Any) -> AsyncIterator[HTTPStore]:
    """Yield an `HTTPStore` for Agent Server and close its connections on exit.

    Keyword arguments go to `HTTPStore`; langgraph.json's `store` section
    (`index`, `ttl`; see `store_config_from_env`) and the environment fill
    the rest. The service is asked for one namespace at start-up, so a wrong
    URL or key, or a service that does not serve the Store, fails the
    deployment at once instead of its first run.
    """
    for k, v in store_config_from_env().items():
        kwargs.setdefault(k, v)
    if "retry" not in kwargs:
        kwargs["retry"] = retry_policy_from_env()
    async with HTTPStore(**kwargs) as s:
        await s.alist_namespaces(limit=1)
        index = s.index_config
        logger.info(
            "saver store ready at %s (%s; requests retried for %gs)",
            s.url,
            f"semantic search on, {index['dims']} dims" if index else "no semantic search",
            s._transport.retry.max_delay,
        )
        try:
            yield s
        finally:
            logger.info("saver store closing")
