"""HTTPSaver's surface: what LangGraph detects on the class, and what users import.

LangGraph's conformance suite and Agent Server decide what a saver can do by
which `BaseCheckpointSaver` methods its class overrides, so adding or losing an
override changes behaviour even when every call still works. These tests pin
that set, the public names, and the module paths they are imported from, so
that code moving inside the package cannot change any of them unseen.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

import saver_client
from saver_client import HTTPSaver

# The BaseCheckpointSaver members HTTPSaver overrides. `get` and `aget` are
# left to the base (they call get_tuple), as are `config_specs` and
# `with_allowlist` (a copy with a stricter serde).
OVERRIDDEN = {
    "__init__",
    "get_next_version",
    "get_tuple",
    "aget_tuple",
    "list",
    "alist",
    "put",
    "aput",
    "put_writes",
    "aput_writes",
    "get_delta_channel_history",
    "aget_delta_channel_history",
    "delete_thread",
    "adelete_thread",
    "delete_for_runs",
    "adelete_for_runs",
    "copy_thread",
    "acopy_thread",
    "prune",
    "aprune",
}

# Public names beyond BaseCheckpointSaver's: lifecycle, maintenance, the
# tree queries and the idempotency ledger.
OWN_PUBLIC = {
    "url",
    "close",
    "aclose",
    "ping",
    "aping",
    "pin",
    "apin",
    "tree",
    "atree",
    "path",
    "apath",
    "children",
    "achildren",
    "leaves",
    "aleaves",
    "abandoned",
    "aabandoned",
    "resume_context",
    "aresume_context",
    "live_messages",
    "alive_messages",
    "claim",
    "aclaim",
    "complete",
    "acomplete",
    "fail",
    "afail",
    "idempotent",
}

# Where each public name is imported from today, besides `saver_client`.
MODULE_PATHS = {
    "saver_client.saver": ["HTTPSaver", "SCOPE_KEY", "Scope", "URL_ENV", "API_KEY_ENV"],
    "saver_client.store": ["HTTPStore"],
    "saver_client.ledger": [
        "Claim",
        "ClaimState",
        "Idempotent",
        "IdempotentCall",
        "StoredFailure",
        "derive_key",
    ],
    "saver_client.tree": ["Branch", "NodeStatus", "ResumeContext", "ThreadTree", "TreeNode"],
    "saver_client.errors": [
        "BadResponseError",
        "ConflictError",
        "GoneError",
        "IdempotencyError",
        "IdempotencyInProgress",
        "IdempotentCallFailed",
        "InternalServerError",
        "InvalidRequestError",
        "NoRouteError",
        "NotFoundError",
        "SaverConnectionError",
        "SaverError",
        "TooLargeError",
        "UnauthorizedError",
        "UnavailableError",
        "UnsupportedMediaTypeError",
    ],
    "saver_client.agent_server": ["checkpointer", "retry_policy_from_env", "RETRY_BUDGET_ENV", "store", "store_config_from_env"],
    "saver_client._http": ["Timeout"],
    "saver_client._transport": ["RetryPolicy"],
}

_MEMBERS = (types.FunctionType, property, classmethod, staticmethod)


def _defined_by(cls: type, name: str) -> type:
    """The class in cls's MRO whose body defines name."""
    return next(c for c in cls.__mro__ if name in vars(c))


def _parameters(fn: Any) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def test_overrides_exactly_these_base_methods() -> None:
    members = [n for n, v in vars(BaseCheckpointSaver).items() if isinstance(v, _MEMBERS)]
    overridden = {n for n in members if _defined_by(HTTPSaver, n) is not BaseCheckpointSaver}
    assert overridden == OVERRIDDEN


def test_capabilities_as_langgraph_detects_them() -> None:
    # The check LangGraph's conformance suite and Agent Server make: the
    # attribute on the class is not the base's.
    for name in OVERRIDDEN - {"__init__"}:
        assert getattr(HTTPSaver, name) is not getattr(BaseCheckpointSaver, name), name
    for name in ("get", "aget", "with_allowlist"):
        assert getattr(HTTPSaver, name) is getattr(BaseCheckpointSaver, name), name


def test_own_public_names() -> None:
    public = {n for n in dir(HTTPSaver) if not n.startswith("_")}
    assert public - set(dir(BaseCheckpointSaver)) == OWN_PUBLIC
    for dunder in ("__enter__", "__exit__", "__aenter__", "__aexit__", "__repr__"):
        assert _defined_by(HTTPSaver, dunder) is not object, dunder


def test_async_twins_take_the_sync_parameters() -> None:
    names = {n for n in dir(HTTPSaver) if not n.startswith("_")}
    twins = sorted(n for n in names if "a" + n in names)
    assert twins == [
        "abandoned", "children", "claim", "close", "complete", "copy_thread",
        "delete_for_runs", "delete_thread", "fail", "get", "get_delta_channel_history",
        "get_tuple", "leaves", "list", "live_messages", "path", "pin", "ping", "prune", "put",
        "put_writes", "resume_context", "tree",
    ]  # fmt: skip
    for name in twins:
        sync, async_ = getattr(HTTPSaver, name), getattr(HTTPSaver, "a" + name)
        assert _parameters(async_) == _parameters(sync), name
        if name == "list":
            assert inspect.isasyncgenfunction(async_)
        else:
            assert inspect.iscoroutinefunction(async_), name


def test_public_names_keep_their_module_paths() -> None:
    for module_name, names in MODULE_PATHS.items():
        module = importlib.import_module(module_name)
        for name in names:
            value = getattr(module, name)
            if name in saver_client.__all__:
                assert value is getattr(saver_client, name), f"{module_name}.{name}"
    # The class says where it lives (Agent Server and pickles name it so).
    assert HTTPSaver.__module__ == "saver_client.saver"
    assert HTTPSaver.__qualname__ == "HTTPSaver"
    exported = {n for names in MODULE_PATHS.values() for n in names}
    assert set(saver_client.__all__) - {"__version__"} <= exported


def _imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """The package's modules a source file imports, under TYPE_CHECKING too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == package}
        elif isinstance(node, ast.ImportFrom):
            name = f"{package}.{node.module or ''}".rstrip(".") if node.level else node.module
            if not name or name.split(".")[0] != package:
                continue
            # `from package import module` needs that module, not all of __init__.
            for alias in node.names:
                sub = f"{name}.{alias.name}"
                found.add(sub if sub in modules else name)
    return found


def test_modules_import_each_other_without_a_cycle() -> None:
    # Importing the package itself runs __init__, which imports every
    # module: a module that imports `saver_client` closes a cycle too.
    files = {
        ("saver_client" if f.stem == "__init__" else f"saver_client.{f.stem}"): f
        for f in Path(saver_client.__file__).parent.glob("*.py")
    }
    graph = {name: _imports(f, "saver_client", set(files)) for name, f in files.items()}
    assert graph["saver_client.ledger"] and "saver_client.saver" not in graph["saver_client.ledger"]
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, "import cycle: " + " -> ".join((*trail, module))
        if module in done:
            return
        for dep in sorted(graph.get(module, ())):
            visit(dep, (*trail, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
