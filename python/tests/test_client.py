"""HTTPSaver's own behaviour: serialisation, paging, concurrency, errors, retries."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import httpx
import ormsgpack
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT

import saver_client
from saver_client import (
    HTTPSaver,
    InternalServerError,
    InvalidRequestError,
    NoRouteError,
    NotFoundError,
    RetryPolicy,
    SaverConnectionError,
    SaverError,
    UnauthorizedError,
    UnavailableError,
)
from saver_client._transport import parse_retry_after

from support.checkpoints import checkpoint, config, meta

# Retries in tests must be fast and few: the behaviour is what matters.
FAST = RetryPolicy(max_attempts=3, max_delay=10.0, backoff=0.001, max_backoff=0.01)


def put_chain(
    saver: HTTPSaver, thread_id: str, n: int, ns: str = "", **meta_extra: Any
) -> list[str]:
    """Put n chained checkpoints; return their ids, oldest first."""
    ids: list[str] = []
    parent: str | None = None
    for step in range(n):
        cp = checkpoint({"step": step}, {"step": step + 1})
        saver.put(config(thread_id, ns, parent), cp, meta(step, **meta_extra), {"step": step + 1})
        ids.append(cp["id"])
        parent = cp["id"]
    return ids


# -- round trips -----------------------------------------------------------------


def test_put_get_round_trip_keeps_types(saver: HTTPSaver, thread_id: str) -> None:
    cp = checkpoint(
        {"a": {"x": [1, 2.5, None]}, "b": b"\x00raw", "c": "text"},
        {"a": 1, "b": "00000000000000000000000000000002.0.5", "c": 3},
        pending_sends=[],
        custom_key={"kept": True},
    )
    cp["versions_seen"] = {"node": {"a": 1}, "__interrupt__": {"b": "x"}}
    cp["updated_channels"] = ["a", "c"]
    returned = saver.put(config(thread_id), cp, meta(), cp["channel_versions"])
    assert returned == config(thread_id, "", cp["id"])

    tup = saver.get_tuple(config(thread_id))
    assert tup is not None
    assert tup.config == returned
    assert tup.parent_config is None
    assert tup.pending_writes == []
    # The whole dict comes back, extra keys and exact version types included.
    assert tup.checkpoint == cp
    assert tup.checkpoint["channel_versions"]["a"] == 1
    assert tup.metadata == meta()


def test_channel_without_value_is_stored_as_empty(saver: HTTPSaver, thread_id: str) -> None:
    # A channel with a new version but no value (as after it was cleared)
    # must not come back as a value, exactly as with InMemorySaver.
    cp = checkpoint({"a": 1}, {"a": 1, "gone": 1})
    saver.put(config(thread_id), cp, meta(), {"a": 1, "gone": 1})
    tup = saver.get_tuple(config(thread_id))
    assert tup is not None
    assert tup.checkpoint["channel_values"] == {"a": 1}
    assert tup.checkpoint["channel_versions"] == {"a": 1, "gone": 1}


def test_metadata_round_trip_filter_and_config_merge(saver: HTTPSaver, thread_id: str) -> None:
    marker = str(uuid.uuid4())
    md = meta(
        3,
        marker=marker,
        nested={"a": [1, {"b": None}], "ü": -7},
        pair=(1, 2),
        ratio=0.25,
        flag=False,
        nothing=None,
    )
    conf = config(thread_id)
    conf["configurable"].update({"user": "bob\u0000", "__pregel_secret": object(), "limit": 5})
    conf["metadata"] = {"run_id": "run-1", "tags_like": ["not", "merged"]}
    cp = checkpoint()
    saver.put(conf, cp, md, {})
    tup = saver.get_tuple(config(thread_id))
    assert tup is not None
    assert tup.metadata == {
        **md,
        "pair": [1, 2],  # tuples become lists, as in any JSON store
        "user": "bob",  # config primitives merge in, NUL stripped
        "limit": 5,
        "run_id": "run-1",
    }
    for key in ("marker", "nested", "pair", "ratio", "flag", "step", "user", "run_id"):
        found = list(
            saver.list(
                None, filter={key: cast(dict[str, Any], tup.metadata)[key], "marker": marker}
            )
        )
        assert [t.config for t in found] == [tup.config], key
    assert list(saver.list(None, filter={"marker": marker, "step": 4})) == []


def test_odd_thread_ids_round_trip(saver: HTTPSaver) -> None:
    suffix = uuid.uuid4().hex[:8]
    for raw in ["a/b", "with space", "100%", "ünï-€-中", "..", "a?b#c&d=e", "x+y"]:
        tid = f"{raw}-{suffix}"
        cp = checkpoint({"v": tid})
        saver.put(config(tid), cp, meta(), {"v": 1})
        saver.put_writes(config(tid, "", cp["id"]), [("ch", tid)], "task")
        tup = saver.get_tuple(config(tid))
        assert tup is not None, tid
        assert tup.config["configurable"]["thread_id"] == tid
        assert tup.checkpoint["channel_values"] == {"v": tid}
        assert tup.pending_writes == [("task", "ch", tid)]
        assert [t.config for t in saver.list(config(tid))] == [tup.config]
        saver.copy_thread(tid, tid + "-copy")
        assert saver.get_tuple(config(tid + "-copy")) is not None
        saver.delete_thread(tid)
        saver.delete_thread(tid + "-copy")
        assert saver.get_tuple(config(tid)) is None


def test_writes_follow_inmemory_semantics(saver: HTTPSaver, thread_id: str) -> None:
    """Same calls on both savers give the same pending writes."""
    memory = InMemorySaver()
    results: list[list[Any]] = []
    for s in (memory, saver):
        cp = checkpoint()
        s.put(config(thread_id), cp, meta(), {})
        target = config(thread_id, "", cp["id"])
        # Special channels replace; ordinary writes are kept as first stored.
        s.put_writes(target, [(ERROR, "e1"), ("ch", 1), (ERROR, "e2")], "t1")
        s.put_writes(target, [("ch", 2), (INTERRUPT, "i1")], "t1")
        s.put_writes(target, [(ERROR, "e3")], "t1")
        s.put_writes(target, [("ch", "other")], "t0", "path")
        s.put_writes(target, [], "t2")
        tup = s.get_tuple(target)
        assert tup is not None
        results.append(sorted(tup.pending_writes or [], key=repr))
    assert results[1] == results[0]
    assert ("t1", ERROR, "e3") in results[1]
    assert ("t1", "ch", 1) in results[1]


def test_writes_may_arrive_before_their_checkpoint(saver: HTTPSaver, thread_id: str) -> None:
    # With async durability, a step's writes can reach the service before the
    # put of the checkpoint they belong to.
    cp = checkpoint({"a": 1})
    saver.put_writes(config(thread_id, "", cp["id"]), [("ch", "early")], "task")
    saver.put(config(thread_id), cp, meta(), {"a": 1})
    tup = saver.get_tuple(config(thread_id))
    assert tup is not None and tup.pending_writes == [("task", "ch", "early")]


def test_pending_writes_order(saver: HTTPSaver, thread_id: str) -> None:
    cp = checkpoint()
    saver.put(config(thread_id), cp, meta(), {})
    target = config(thread_id, "", cp["id"])
    saver.put_writes(target, [("c", "b0"), ("c", "b1")], "task-b", "~2")
    saver.put_writes(target, [("c", "a0"), ("c", "a1")], "task-a", "~1")
    saver.put_writes(target, [("c", "z0")], "task-z", "~1")
    tup = saver.get_tuple(target)
    assert tup is not None
    # Ordered by (task_path, task_id, idx), the order live execution applies.
    assert [w[2] for w in tup.pending_writes or []] == ["a0", "a1", "z0", "b0", "b1"]


def test_missing_returns_none(saver: HTTPSaver, thread_id: str) -> None:
    assert saver.get_tuple(config(thread_id)) is None
    saver.put(config(thread_id), checkpoint(), meta(), {})
    assert saver.get_tuple(config(thread_id, "", str(uuid6()))) is None
    assert saver.get_tuple(config(thread_id, "other-ns")) is None
    assert list(saver.list(config(f"{thread_id}-nope"))) == []

    async def run() -> None:
        async with HTTPSaver(saver.url) as s:
            assert await s.aget_tuple(config(f"{thread_id}-nope")) is None
            assert await s.aget_tuple(config(thread_id, "", str(uuid6()))) is None

    asyncio.run(run())


# -- list and paging ----------------------------------------------------------------


def test_list_pages_and_limits(saver: HTTPSaver, thread_id: str) -> None:
    n = 250  # more than two pages of the service's default 100
    ids = put_chain(saver, thread_id, n)
    child = put_chain(saver, thread_id, 3, ns="child:1")
    newest_first = ids[::-1]

    listed = list(saver.list(config(thread_id)))
    assert [t.config["configurable"]["checkpoint_id"] for t in listed] == newest_first
    assert [t.checkpoint["channel_values"] for t in listed[:2]] == [
        {"step": n - 1},
        {"step": n - 2},
    ]
    assert listed[0].parent_config == config(thread_id, "", ids[-2])

    # No checkpoint_ns: every namespace of the thread.
    everything = list(saver.list({"configurable": {"thread_id": thread_id}}))
    assert len(everything) == n + 3
    assert {t.config["configurable"]["checkpoint_id"] for t in everything} == set(ids + child)
    all_ids = [t.config["configurable"]["checkpoint_id"] for t in everything]
    assert all_ids == sorted(all_ids, reverse=True)

    def listed_ids(**kw: Any) -> list[str]:
        return [
            t.config["configurable"]["checkpoint_id"] for t in saver.list(config(thread_id), **kw)
        ]

    assert listed_ids(limit=0) == []
    assert listed_ids(limit=-1) == []  # InMemorySaver's semantics: nothing
    assert listed_ids(limit=1) == newest_first[:1]
    assert listed_ids(limit=100) == newest_first[:100]
    assert listed_ids(limit=101) == newest_first[:101]
    assert listed_ids(limit=220) == newest_first[:220]
    assert listed_ids(limit=10_000) == newest_first
    before = config(thread_id, "", ids[200])
    assert listed_ids(before=before) == ids[:200][::-1]
    assert listed_ids(before=before, limit=150) == ids[50:200][::-1]
    assert listed_ids(filter={"step": 7}) == [ids[7]]
    assert [
        t.config["configurable"]["checkpoint_id"] for t in saver.list(config(thread_id, "", ids[3]))
    ] == [ids[3]]

    async def alisted(**kw: Any) -> list[str]:
        async with HTTPSaver(saver.url) as s:
            return [
                t.config["configurable"]["checkpoint_id"]
                async for t in s.alist(config(thread_id), **kw)
            ]

    assert asyncio.run(alisted()) == newest_first
    assert asyncio.run(alisted(limit=130)) == newest_first[:130]
    assert asyncio.run(alisted(limit=0)) == []
    assert asyncio.run(alisted(before=before, limit=150)) == ids[50:200][::-1]


def test_list_without_config_searches_every_thread(saver: HTTPSaver) -> None:
    marker = str(uuid.uuid4())
    a = put_chain(saver, f"{marker}-a", 2, marker=marker)
    b = put_chain(saver, f"{marker}-b", 1, ns="child:x", marker=marker)
    found = list(saver.list(None, filter={"marker": marker}))
    assert sorted(t.config["configurable"]["checkpoint_id"] for t in found) == sorted(a + b)


# -- serializers and copies ---------------------------------------------------------


class XorCipher:
    """A toy CipherProtocol: enough to prove the service only sees ciphertext."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def _xor(self, data: bytes) -> bytes:
        return bytes(b ^ self.key[i % len(self.key)] for i, b in enumerate(data))

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", self._xor(plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return self._xor(ciphertext)


def test_encrypted_serializer(saver_url: str, thread_id: str) -> None:
    serde = EncryptedSerializer(XorCipher(b"k3y!"))
    secret = "top-secret-value"
    with HTTPSaver(saver_url, serde=serde) as saver:
        cp = checkpoint({"secret": secret, "n": 5})
        saver.put(config(thread_id), cp, meta(), {"secret": 1, "n": 1})
        saver.put_writes(config(thread_id, "", cp["id"]), [("ch", secret)], "task")
        tup = saver.get_tuple(config(thread_id))
        assert tup is not None
        assert tup.checkpoint == cp
        assert tup.pending_writes == [("task", "ch", secret)]

        # What the service stores: type tags marked encrypted, no plaintext.
        raw = httpx.get(
            f"{saver_url}/v1/threads/{thread_id}/checkpoint",
            params={"checkpoint_ns": ""},
            headers={"Accept": "application/msgpack"},
        )
        assert raw.status_code == 200
        body = ormsgpack.unpackb(raw.content)
        typed = [
            body["checkpoint"],
            *(v["value"] for v in body["values"]),
            *(w["value"] for w in body["writes"]),
        ]
        assert all(t["type"].endswith("+xor") for t in typed), [t["type"] for t in typed]
        assert not any(secret.encode() in t["data"] for t in typed)

        # A saver without the key cannot read it back.
        with HTTPSaver(saver_url) as plain, pytest.raises(NotImplementedError, match="xor"):
            plain.get_tuple(config(thread_id))

        # And a graph runs through the encrypted saver as through any other.
        from collections import Counter

        from test_graphs import sequential_graph

        graph = sequential_graph(saver, Counter())
        gconf: RunnableConfig = {"configurable": {"thread_id": f"{thread_id}-graph"}}
        assert graph.invoke({"log": ["in"], "n": 0}, gconf)["log"] == ["in", "a", "b", "c"]
        assert graph.get_state(gconf).values["n"] == 3


def test_copy_and_with_allowlist(saver: HTTPSaver, thread_id: str) -> None:
    clone = copy.copy(saver)
    cp = checkpoint({"x": 1})
    clone.put(config(thread_id), cp, meta(), {"x": 1})
    assert saver.get_tuple(config(thread_id)) is not None

    strict = HTTPSaver(saver.url, serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    allowed = strict.with_allowlist([("tests", "Thing")])
    assert isinstance(allowed, HTTPSaver) and allowed is not strict
    assert allowed.serde is not strict.serde
    tup = allowed.get_tuple(config(thread_id))
    assert tup is not None and tup.checkpoint["channel_values"] == {"x": 1}
    # Closing one copy releases shared connections; the others reconnect.
    strict.close()
    assert allowed.get_tuple(config(thread_id)) is not None
    allowed.close()
    assert copy.copy(saver).get_next_version(None, None).startswith("0" * 31 + "1.")


def test_get_next_version_like_inmemory() -> None:
    s = HTTPSaver("http://127.0.0.1:9")
    m = InMemorySaver()
    currents: list[Any] = [None, 1, 41, "00000000000000000000000000000007.0.123"]
    for current in currents:
        ours, theirs = s.get_next_version(current, None), m.get_next_version(current, None)
        assert ours.split(".")[0] == theirs.split(".")[0]
        assert len(ours.split(".")[0]) == 32
    v1 = s.get_next_version(None, None)
    v2 = s.get_next_version(v1, None)
    assert v2 > v1
    assert s.get_next_version(v1, None) != s.get_next_version(v1, None)  # random suffix


# -- concurrency and event loops --------------------------------------------------------


def test_threads_share_one_saver(saver: HTTPSaver, thread_id: str) -> None:
    cp = checkpoint()
    saver.put(config(thread_id), cp, meta(), {})
    target = config(thread_id, "", cp["id"])

    def work(i: int) -> None:
        saver.put_writes(target, [("ch", i), ("other", -i)], f"task-{i:03}")
        tid = f"{thread_id}-{i}"
        put_chain(saver, tid, 3)
        tup = saver.get_tuple(config(tid))
        assert tup is not None and tup.metadata["step"] == 2

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(work, range(64)))
    tup = saver.get_tuple(target)
    assert tup is not None
    writes = tup.pending_writes or []
    assert len(writes) == 128
    assert sorted(w[2] for w in writes if w[1] == "ch") == list(range(64))


def test_async_concurrency_and_several_loops(saver_url: str, thread_id: str) -> None:
    saver = HTTPSaver(saver_url)
    cp = checkpoint()

    async def first() -> None:
        await saver.aput(config(thread_id), cp, meta(), {})
        target = config(thread_id, "", cp["id"])
        await asyncio.gather(*(saver.aput_writes(target, [("ch", i)], f"t{i}") for i in range(50)))

    async def count() -> int:
        tup = await saver.aget_tuple(config(thread_id))
        assert tup is not None
        return len(tup.pending_writes or [])

    # Separate asyncio.run calls, as scripts and tests do: a client bound to a
    # closed loop must not be reused. No aclose in between, on purpose.
    asyncio.run(first())
    assert asyncio.run(count()) == 50
    assert asyncio.run(count()) == 50
    # Each loop's connections were closed as its asyncio.run ended.
    assert saver._transport.async_sessions == 0
    # The sync side is unaffected by the loops coming and going.
    tup = saver.get_tuple(config(thread_id))
    assert tup is not None and len(tup.pending_writes or []) == 50
    saver.close()


def test_context_managers(saver_url: str, thread_id: str) -> None:
    with HTTPSaver(saver_url) as s:
        s.put(config(thread_id), checkpoint(), meta(), {})
    # A closed saver reconnects when used again rather than failing.
    assert s.get_tuple(config(thread_id)) is not None
    s.close()

    async def run() -> None:
        async with HTTPSaver(saver_url) as a:
            assert await a.aget_tuple(config(thread_id)) is not None

    asyncio.run(run())


def test_url_from_environment(monkeypatch: pytest.MonkeyPatch, saver_url: str) -> None:
    monkeypatch.setenv("SAVER_URL", saver_url + "/")
    assert HTTPSaver().url == saver_url
    monkeypatch.delenv("SAVER_URL")
    with pytest.raises(ValueError, match="SAVER_URL"):
        HTTPSaver()
    with pytest.raises(ValueError):
        HTTPSaver("ftp://127.0.0.1:1")


# -- extended operations through the sync API ----------------------------------------------


def test_sync_delete_copy_prune_runs(saver: HTTPSaver, thread_id: str) -> None:
    src, dst = f"{thread_id}-src", f"{thread_id}-dst"
    ids = put_chain(saver, src, 3, run_id=f"{thread_id}-run")
    saver.put_writes(config(src, "", ids[-1]), [("ch", "w")], "task")
    saver.copy_thread(src, dst)
    copied = list(saver.list(config(dst)))
    assert [t.config["configurable"]["checkpoint_id"] for t in copied] == ids[::-1]
    assert copied[0].pending_writes == [("task", "ch", "w")]

    saver.prune([dst], strategy="keep_latest")
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(config(dst))] == [ids[-1]]
    saver.prune([dst], strategy="delete")
    assert list(saver.list(config(dst))) == []
    with pytest.raises(ValueError):
        saver.prune([dst], strategy="everything")

    saver.delete_for_runs([f"{thread_id}-run"])
    assert list(saver.list(config(src))) == []

    put_chain(saver, src, 2)
    saver.delete_thread(src)
    assert saver.get_tuple(config(src)) is None
    saver.delete_thread(f"{thread_id}-never-existed")
    saver.delete_for_runs([])
    saver.prune([])


# -- errors ------------------------------------------------------------------------------


def test_errors_from_the_service(saver: HTTPSaver, saver_url: str, thread_id: str) -> None:
    with pytest.raises(NotFoundError) as nf:
        saver.copy_thread(f"{thread_id}-missing", f"{thread_id}-dst")
    assert nf.value.code == "not_found" and nf.value.status == 404
    assert nf.value.request_id
    assert list(saver.list(config(f"{thread_id}-dst"))) == []

    # A wrong base URL is an error, never "no such checkpoint".
    with HTTPSaver(saver_url + "/not-the-api") as wrong, pytest.raises(NoRouteError) as nr:
        wrong.get_tuple(config(thread_id))
    assert nr.value.code == "no_route" and nr.value.status == 404

    with pytest.raises(InvalidRequestError) as inv:
        saver.put(config("x" * 300), checkpoint(), meta(), {})
    assert inv.value.code == "invalid" and inv.value.status == 400
    assert "thread_id" in inv.value.message

    with pytest.raises(InvalidRequestError):
        saver.put_writes(config(thread_id, "", "cp"), [("ch", 1)], "")

    # The service answers with the request id the client sent.
    sent = uuid.uuid4().hex
    echoed = httpx.get(f"{saver_url}/v1/threads/x/checkpoint", headers={"X-Request-ID": sent})
    assert echoed.headers["X-Request-ID"] == sent

    err = pickle.loads(pickle.dumps(inv.value))
    assert (err.code, err.status, err.request_id) == ("invalid", 400, inv.value.request_id)
    assert isinstance(err, InvalidRequestError) and isinstance(err, SaverError)


# -- a scripted fake service, for failures the real one will not produce on demand -------


class FakeService:
    """An HTTP server on 127.0.0.1 answering from a script, recording requests."""

    def __init__(self, script: list[tuple[int, dict[str, str], Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": body,
                    }
                )
                status, headers, payload = (
                    fake.script.pop(0) if len(fake.script) > 1 else fake.script[0]
                )
                if isinstance(payload, (dict, list)):
                    data = ormsgpack.packb(payload)
                    headers = {"Content-Type": "application/msgpack", **headers}
                else:
                    data = (payload or "").encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[Any]:
    services: list[FakeService] = []

    def make(*script: tuple[int, dict[str, str], Any]) -> FakeService:
        services.append(FakeService(list(script)))
        return services[-1]

    yield make
    for s in services:
        s.close()


def err(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": f"{code} from the fake"}}


STORED = {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"}


def test_retries_503_then_succeeds(fake: Any) -> None:
    svc = fake(
        (503, {"Retry-After": "0"}, err("unavailable")),
        (503, {}, err("unavailable")),
        (200, {}, STORED),
    )
    with HTTPSaver(svc.url, api_key="sekret", retry=FAST) as s:
        cp = checkpoint()
        cp["id"] = "c1"
        assert s.put(config("t"), cp, meta(), {}) == config("t", "", "c1")
    assert len(svc.requests) == 3
    ids = {r["headers"]["X-Request-ID"] for r in svc.requests}
    assert len(ids) == 1  # one logical call, one id across its tries
    first = svc.requests[0]
    assert first["method"] == "POST" and first["path"] == "/v1/threads/t/checkpoints"
    assert first["headers"]["Content-Type"] == "application/msgpack"
    assert first["headers"]["Accept"] == "application/msgpack"
    assert first["headers"]["Authorization"] == "Bearer sekret"
    body = ormsgpack.unpackb(first["body"])
    assert set(body) == {
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "checkpoint",
        "metadata",
        "channel_versions",
        "blobs",
        "scope",
    }
    assert body["parent_checkpoint_id"] == ""
    assert body["scope"] == ""  # no scope named: the service's default


def test_retry_after_is_honoured(fake: Any) -> None:
    svc = fake((503, {"Retry-After": "1"}, err("unavailable")), (200, {}, STORED))
    start = time.monotonic()

    async def run() -> None:
        async with HTTPSaver(svc.url, retry=FAST) as s:
            await s.adelete_thread("t")

    asyncio.run(run())
    assert time.monotonic() - start >= 1.0
    assert len(svc.requests) == 2


def test_retries_are_bounded(fake: Any) -> None:
    svc = fake((503, {"Retry-After": "0"}, err("unavailable")))
    with HTTPSaver(svc.url, retry=FAST) as s, pytest.raises(UnavailableError) as exc:
        s.delete_thread("t")
    assert exc.value.status == 503 and exc.value.retry_after == 0
    assert len(svc.requests) == FAST.max_attempts

    async def run() -> None:
        async with HTTPSaver(svc.url, retry=FAST) as s:
            await s.adelete_thread("t")

    with pytest.raises(UnavailableError):
        asyncio.run(run())
    assert len(svc.requests) == 2 * FAST.max_attempts


def test_other_errors_are_not_retried(fake: Any) -> None:
    svc = fake((500, {"X-Request-ID": "rid-1"}, err("internal")))
    with HTTPSaver(svc.url, retry=FAST) as s, pytest.raises(InternalServerError) as exc:
        s.delete_thread("t")
    assert exc.value.request_id == "rid-1"
    assert len(svc.requests) == 1

    svc = fake((401, {}, err("unauthorized")))
    with HTTPSaver(svc.url, retry=FAST) as s, pytest.raises(UnauthorizedError):
        s.delete_thread("t")


def test_only_not_found_means_missing(fake: Any) -> None:
    svc = fake((404, {}, err("not_found")))
    with HTTPSaver(svc.url, retry=FAST) as s:
        assert s.get_tuple(config("t")) is None
    svc = fake((404, {}, err("no_route")))
    with HTTPSaver(svc.url, retry=FAST) as s, pytest.raises(NoRouteError):
        s.get_tuple(config("t"))
    # A 404 without the service's error body (a proxy's page) is not "missing" either.
    svc = fake((404, {"Content-Type": "text/html"}, "<html>nope</html>"))
    with HTTPSaver(svc.url, retry=FAST) as s, pytest.raises(NoRouteError) as exc:
        s.get_tuple(config("t"))
    assert "nope" in exc.value.message


def test_a_service_without_delta_history_is_older_and_nothing_is_walked(fake: Any) -> None:
    """An older service has no delta-history route: the saver says so, naming
    the route, and never walks the checkpoints one request each instead."""
    no_route = {"error": {"code": "no_route", "message": "No such route."}}
    svc = fake((404, {"X-Request-ID": "rid-old"}, no_route))
    target = config("t", "", "c2")
    want = (
        "the saver service has no delta-history route "
        "(POST /v1/threads/{thread_id}/delta-history), which DeltaChannel histories "
        "need: the service is older than this client "
        f"(saver-client {saver_client.__version__}); upgrade the service. (No such route.)"
    )

    async def aread(s: HTTPSaver) -> Any:
        return await s.aget_delta_channel_history(config=target, channels=["messages"])

    with HTTPSaver(svc.url, retry=FAST) as s:
        for read in (
            lambda: s.get_delta_channel_history(config=target, channels=["messages"]),
            lambda: asyncio.run(aread(s)),
        ):
            with pytest.raises(NoRouteError) as exc:
                read()
            assert exc.value.message == want
            assert (exc.value.code, exc.value.status, exc.value.request_id) == (
                "no_route",
                404,
                "rid-old",
            )
    assert [(r["method"], r["path"]) for r in svc.requests] == [
        ("POST", "/v1/threads/t/delta-history")
    ] * 2


def test_connection_errors_are_retried_then_raised() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with (
        HTTPSaver(f"http://127.0.0.1:{port}", retry=FAST) as s,
        pytest.raises(SaverConnectionError),
    ):
        s.get_tuple(config("t"))


def test_pauses_between_tries() -> None:
    """One rule for every pause, the first (outside tenacity) and the later
    ones: Retry-After plus jitter, else full-jitter exponential backoff."""
    from saver_client._transport import _pause

    policy = RetryPolicy(backoff=0.1, max_backoff=1.0)
    for attempt, ceiling in ((1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (2000, 1.0)):
        pauses = [_pause(policy, None, attempt) for _ in range(200)]
        assert all(0 <= p <= ceiling for p in pauses), (attempt, max(pauses))
        assert max(pauses) > ceiling / 2, (attempt, max(pauses))  # jittered up to the ceiling
    busy = UnavailableError("unavailable", "busy", status=503, retry_after=3.0)
    assert all(3.0 <= _pause(policy, busy, 1) <= 3.1 for _ in range(50))


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after("-5") == 0.0
    later = parse_retry_after("Wed, 21 Oct 2099 07:28:00 GMT")
    assert later is not None and later > 1e6
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_sync_and_async_requests_alike(fake: Any) -> None:
    """A proxy's bare error reads the same from both sides, and neither asks
    for a compressed answer it could not read, nor keeps cookies."""
    svc = fake((502, {"Set-Cookie": "lb=1"}, ""), (502, {}, ""))
    messages = []
    with HTTPSaver(svc.url, retry=FAST) as s, pytest.raises(SaverError) as exc:
        s.delete_thread("t")
    messages.append(exc.value.message)

    async def main() -> None:
        async with HTTPSaver(svc.url, retry=FAST) as s:
            for _ in range(2):
                with pytest.raises(SaverError) as exc:
                    await s.adelete_thread("t")
            messages.append(exc.value.message)

    asyncio.run(main())
    assert messages == ["Bad Gateway", "Bad Gateway"]
    for r in svc.requests:
        assert "Accept-Encoding" not in r["headers"], r["headers"]
        assert "Cookie" not in r["headers"], r["headers"]


def test_json_error_bodies_are_understood(fake: Any) -> None:
    svc = fake((409, {"Content-Type": "application/json"}, json.dumps(err("conflict"))))
    with HTTPSaver(svc.url, retry=FAST) as s, pytest.raises(SaverError) as exc:
        s.delete_thread("t")
    assert exc.value.code == "conflict" and exc.value.status == 409


def test_tuple_shape(saver: HTTPSaver, thread_id: str) -> None:
    ids = put_chain(saver, thread_id, 2)
    tup = saver.get_tuple(config(thread_id, "", ids[1]))
    assert isinstance(tup, CheckpointTuple)
    assert tup.config == config(thread_id, "", ids[1])
    assert tup.parent_config == config(thread_id, "", ids[0])
    assert tup.checkpoint["id"] == ids[1]
