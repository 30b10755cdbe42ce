"""What the benchmark measures: saver operations, real graphs, DynamoDB storage
cost of the chat loop, growth of a thread, and the DeltaChannel chat. Each function takes a saver
(or the savers) and returns plain numbers; run.py repeats, interleaves and
takes medians.
"""

from __future__ import annotations

import operator
import random
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send

# -- data -----------------------------------------------------------------------

_WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her "
    "would make like him into time has look two more write go see number no way could people "
    "my than first water been call who oil its now find long down day did get come made may "
    "part order refund customer invoice shipment account balance payment ticket agent tool "
    "result error retry status pending approved declined summary context question answer"
).split()


def text(rng: random.Random, nbytes: int) -> str:
    """English-like words, about nbytes long: compresses like chat text, not like zeros."""
    out: list[str] = []
    size = 0
    while size < nbytes:
        w = rng.choice(_WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:nbytes]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# -- checkpoints built by hand (saver operations, growth) --------------------------


class ThreadWriter:
    """Builds the checkpoints a graph would put on one thread: a 1 KB context
    channel set once, a message window (4 x 512 B) and a step counter that
    change every step, and a parent link to the previous checkpoint."""

    def __init__(self, saver: BaseCheckpointSaver[Any], thread_id: str, seed: int) -> None:
        self.saver = saver
        self.thread_id = thread_id
        self.rng = random.Random(seed)
        self.versions: dict[str, Any] = {}
        self.values: dict[str, Any] = {"context": text(self.rng, 1024), "messages": [], "step": 0}
        self.step = -1
        self.parent_id: str | None = None

    def next(self) -> tuple[dict[str, Any], Any, dict[str, Any], dict[str, Any]]:
        """(config, checkpoint, metadata, new_versions) of the next put."""
        self.step += 1
        changed = ["messages", "step"] if self.step else ["context", "messages", "step"]
        msgs = self.values["messages"][-3:] + [
            {"role": "user" if self.step % 2 else "assistant", "content": text(self.rng, 512)}
        ]
        self.values = {**self.values, "messages": msgs, "step": self.step}
        new_versions = {}
        for ch in changed:
            self.versions[ch] = self.saver.get_next_version(self.versions.get(ch), None)
            new_versions[ch] = self.versions[ch]
        ckpt = empty_checkpoint()
        ckpt.update(
            id=str(uuid6(clock_seq=self.step)),
            ts=datetime.now(timezone.utc).isoformat(),
            channel_values=dict(self.values),
            channel_versions=dict(self.versions),
            versions_seen={"agent": {"messages": self.versions["messages"]}},
            updated_channels=changed,
        )
        conf: dict[str, Any] = {"thread_id": self.thread_id, "checkpoint_ns": ""}
        if self.parent_id:
            conf["checkpoint_id"] = self.parent_id
        self.parent_id = ckpt["id"]
        metadata = {"source": "loop", "step": self.step, "parents": {}}
        return {"configurable": conf}, ckpt, metadata, new_versions


def _run_callers(conc: int, body: Callable[[int, Callable[[float], None]], None]) -> tuple[list[float], float]:
    """Run body(caller, record) on conc threads started together; latencies (s) and wall time."""
    lat: list[list[float]] = [[] for _ in range(conc)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(conc + 1)

    def caller(c: int) -> None:
        barrier.wait()
        try:
            body(c, lat[c].append)
        except BaseException as exc:  # reported after join
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(c,), daemon=True) for c in range(conc)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return [x for per in lat for x in per], wall


OPS = ("put", "put_writes", "get_tuple", "list")


def saver_ops(saver: BaseCheckpointSaver[Any], conc: int, per_caller: int, tag: str) -> dict[str, dict[str, float]]:
    """put, put_writes, get_tuple(latest), list(limit 10) through the saver's Python
    API at conc callers, each on its own thread; p50/p99 in ms and ops/s per op."""
    writers = [ThreadWriter(saver, f"ops-{tag}-{c}", seed=c) for c in range(conc)]
    configs: list[list[dict[str, Any]]] = [[] for _ in range(conc)]
    rng = random.Random(7)
    payload = text(rng, 512)
    out: dict[str, dict[str, float]] = {}

    def record(op: str, lat: list[float], wall: float) -> None:
        out[op] = {
            "p50_ms": pct(lat, 0.50) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3,
            "ops_per_sec": len(lat) / wall,
        }

    def puts(c: int, rec: Callable[[float], None]) -> None:
        w = writers[c]
        for _ in range(per_caller):
            args = w.next()
            t0 = time.perf_counter()
            cfg = saver.put(*args)
            rec(time.perf_counter() - t0)
            configs[c].append(cfg)

    def put_writes(c: int, rec: Callable[[float], None]) -> None:
        # One task's writes per checkpoint, as a graph leaves them.
        for j in range(per_caller):
            cfg = configs[c][j % len(configs[c])]
            writes = [("messages", {"role": "tool", "content": payload}), ("step", j)]
            task = str(uuid.uuid4())
            t0 = time.perf_counter()
            saver.put_writes(cfg, writes, task, "")
            rec(time.perf_counter() - t0)

    def get_tuple(c: int, rec: Callable[[float], None]) -> None:
        cfg = {"configurable": {"thread_id": writers[c].thread_id, "checkpoint_ns": ""}}
        for _ in range(per_caller):
            t0 = time.perf_counter()
            tup = saver.get_tuple(cfg)
            rec(time.perf_counter() - t0)
            assert tup is not None

    def list_(c: int, rec: Callable[[float], None]) -> None:
        cfg = {"configurable": {"thread_id": writers[c].thread_id, "checkpoint_ns": ""}}
        for _ in range(per_caller):
            t0 = time.perf_counter()
            got = list(saver.list(cfg, limit=10))
            rec(time.perf_counter() - t0)
            assert len(got) == min(10, per_caller)

    for op, body in (("put", puts), ("put_writes", put_writes), ("get_tuple", get_tuple), ("list", list_)):
        lat, wall = _run_callers(conc, body)
        record(op, lat, wall)
    return out


# -- graphs ------------------------------------------------------------------------


class SeqState(TypedDict):
    log: Annotated[list[str], operator.add]
    data: str


def sequential_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """(a) seven nodes in a row, each appending to a log and replacing a 512 B field."""
    rng = random.Random(1)
    blobs = [text(rng, 512) for _ in range(7)]
    builder = StateGraph(SeqState)
    prev = START
    for i in range(7):
        name = f"step{i}"
        builder.add_node(name, lambda _s, i=i: {"log": [f"step{i}"], "data": blobs[i]})
        builder.add_edge(prev, name)
        prev = name
    builder.add_edge(prev, END)
    return builder.compile(checkpointer=checkpointer)


def chat_graph(checkpointer: BaseCheckpointSaver[Any], replies: list[str]) -> Any:
    """(b) one chat node answering each turn; MessagesState grows by two messages a turn."""

    def chat(state: MessagesState) -> dict[str, Any]:
        turn = sum(1 for m in state["messages"] if isinstance(m, HumanMessage))
        return {"messages": [AIMessage(content=replies[(turn - 1) % len(replies)])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", END)
    return builder.compile(checkpointer=checkpointer)


class FanState(TypedDict):
    topic: str
    results: Annotated[list[str], operator.add]
    summary: str


def fanout_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """(c) a planner sends 10 workers (Send), whose results a merge node joins."""
    rng = random.Random(3)
    outs = [text(rng, 256) for _ in range(10)]

    def planner(state: FanState) -> dict[str, Any]:
        return {"summary": ""}

    def route(state: FanState) -> list[Send]:
        return [Send("worker", {"topic": state["topic"], "i": i}) for i in range(10)]

    def worker(arg: dict[str, Any]) -> dict[str, Any]:
        return {"results": [outs[arg["i"]]]}

    def merge(state: FanState) -> dict[str, Any]:
        return {"summary": f"{len(state['results'])} results"}

    builder = StateGraph(FanState)
    builder.add_node("planner", planner)
    builder.add_node("worker", worker)
    builder.add_node("merge", merge)
    builder.add_edge(START, "planner")
    builder.add_conditional_edges("planner", route, ["worker"])
    builder.add_edge("worker", "merge")
    builder.add_edge("merge", END)
    return builder.compile(checkpointer=checkpointer)


def supersteps(graph: Any, config: dict[str, Any]) -> int:
    """Checkpoints one run wrote (its supersteps, the input step included)."""
    return sum(1 for _ in graph.checkpointer.list(config))


def time_invokes(graph: Any, make_input: Callable[[], Any], runs: int, tag: str) -> tuple[list[float], int]:
    """Wall time (s) of each of `runs` fresh-thread invokes, and supersteps per run."""
    times = []
    steps = 0
    for r in range(runs):
        cfg = {"configurable": {"thread_id": f"{tag}-{r}"}}
        t0 = time.perf_counter()
        graph.invoke(make_input(), cfg, durability="sync")
        times.append(time.perf_counter() - t0)
        if r == 0:
            steps = supersteps(graph, cfg)
    return times, steps


def chat_prompts(turns: int) -> tuple[list[str], list[str]]:
    """About 1 KB a question and 1 KB an answer: the list grows ~2 KB a turn."""
    rng = random.Random(11)
    return [text(rng, 1000) for _ in range(turns)], [text(rng, 1000) for _ in range(turns)]


def chat_loop(
    saver: BaseCheckpointSaver[Any],
    turns: int,
    tag: str,
    after_turn: Callable[[int], None] | None = None,
) -> list[float]:
    """Seconds of each turn of one chat thread (invoke, durability sync)."""
    questions, replies = chat_prompts(turns)
    graph = chat_graph(saver, replies)
    cfg = {"configurable": {"thread_id": f"chat-{tag}"}}
    times = []
    for t in range(turns):
        t0 = time.perf_counter()
        graph.invoke({"messages": [HumanMessage(content=questions[t])]}, cfg, durability="sync")
        times.append(time.perf_counter() - t0)
        if after_turn is not None:
            after_turn(t)
    return times


# -- growth ------------------------------------------------------------------------


def grow_thread(saver: BaseCheckpointSaver[Any], writer: ThreadWriter, upto: int, workers: int = 8) -> None:
    """Put checkpoints until the thread holds `upto` (parallel puts, ids in order)."""
    batch = [writer.next() for _ in range(upto - writer.step - 1)]
    with ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(lambda args: saver.put(*args), batch):
            pass


def growth_point(saver: BaseCheckpointSaver[Any], thread_id: str, reps: int, with_tree: bool) -> dict[str, float]:
    """Median ms of get_tuple(latest), list(limit 10) with and without the
    namespace, and (our saver) every tree query, on one thread: the whole
    live path, the head's children, the leaves, the abandoned branches and
    the resume context of the last 50 steps."""
    with_ns = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    any_ns = {"configurable": {"thread_id": thread_id}}
    queries: dict[str, Callable[[], Any]] = {
        "get_tuple": lambda: saver.get_tuple(with_ns),
        "list10": lambda: list(saver.list(with_ns, limit=10)),
        "list10_all_ns": lambda: list(saver.list(any_ns, limit=10)),
    }
    if with_tree:
        queries["live_path"] = lambda: saver.path(thread_id)  # type: ignore[attr-defined]
        queries["children"] = lambda: saver.children(thread_id)  # type: ignore[attr-defined]
        queries["leaves"] = lambda: saver.leaves(thread_id)  # type: ignore[attr-defined]
        queries["abandoned"] = lambda: saver.abandoned(thread_id)  # type: ignore[attr-defined]
        queries["context50"] = lambda: saver.resume_context(thread_id, limit=50)  # type: ignore[attr-defined]
    out = {}
    for name, q in queries.items():
        q()  # warm
        samples = []
        deadline = time.perf_counter() + 20.0  # a slow query gets fewer samples, not minutes
        for _ in range(reps):
            t0 = time.perf_counter()
            q()
            samples.append(time.perf_counter() - t0)
            if time.perf_counter() > deadline and len(samples) >= 3:
                break
        out[name] = median(samples) * 1e3
    return out


# -- DeltaChannel chat (d) -----------------------------------------------------------


def _add_all_messages(state: list[Any], writes: Any) -> list[Any]:
    """add_messages over a batch of writes: a DeltaChannel reducer."""
    for w in writes:
        state = add_messages(state, w)
    return state


class DeltaChatState(TypedDict):
    messages: Annotated[list[Any], DeltaChannel(_add_all_messages)]


def delta_chat_graph(checkpointer: BaseCheckpointSaver[Any], replies: list[str]) -> Any:
    """(d) the chat of (b) with its messages in a DeltaChannel (a snapshot every
    100 updates, LangGraph's default): a turn stores its two messages, not the list."""

    def chat(state: DeltaChatState) -> dict[str, Any]:
        turn = sum(1 for m in state["messages"] if isinstance(m, HumanMessage))
        return {"messages": [AIMessage(content=replies[(turn - 1) % len(replies)])]}

    builder = StateGraph(DeltaChatState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", END)
    return builder.compile(checkpointer=checkpointer)


SAVER_CALLS = ("get_tuple", "list", "put", "put_writes", "get_delta_channel_history")


class CallCounter:
    """Counts the calls a graph makes of a saver's methods (and, for HTTPSaver,
    its HTTP requests), by wrapping them on the instance until `close`."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.saver = saver
        self.calls = 0
        self.http = 0
        self._wrapped: list[tuple[Any, str]] = []
        for name in SAVER_CALLS:
            self._wrap(saver, name, "calls")
        transport = getattr(saver, "_transport", None)
        if transport is not None:
            self._wrap(transport, "request", "http")

    def _wrap(self, obj: Any, name: str, counter: str) -> None:
        orig = getattr(obj, name)

        def counted(*args: Any, **kw: Any) -> Any:
            setattr(self, counter, getattr(self, counter) + 1)
            return orig(*args, **kw)

        setattr(obj, name, counted)
        self._wrapped.append((obj, name))

    def take(self) -> tuple[int, int]:
        """(saver calls, HTTP requests) since the last take."""
        out = (self.calls, self.http)
        self.calls = self.http = 0
        return out

    def close(self) -> None:
        for obj, name in self._wrapped:
            delattr(obj, name)


def delta_chat_loop(
    saver: BaseCheckpointSaver[Any],
    turns: int,
    tag: str,
    after_turn: Callable[[int], None] | None = None,
) -> tuple[list[float], Any, dict[str, Any]]:
    """Seconds of each turn of one DeltaChannel chat thread (invoke, durability
    sync), with the graph and config to read it back."""
    questions, replies = chat_prompts(turns)
    graph = delta_chat_graph(saver, replies)
    cfg = {"configurable": {"thread_id": f"delta-{tag}"}}
    times = []
    for t in range(turns):
        t0 = time.perf_counter()
        graph.invoke({"messages": [HumanMessage(content=questions[t])]}, cfg, durability="sync")
        times.append(time.perf_counter() - t0)
        if after_turn is not None:
            after_turn(t)
    return times, graph, cfg


def response_bytes(url: str) -> int:
    """Response body bytes the service at url has sent, from its /metrics
    (saver_http_response_bytes_total), leaving out its answers to /metrics."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("saver_http_response_bytes_total{") and "metrics" not in line.split("}")[0]:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def read_history(graph: Any, cfg: dict[str, Any], budget: float) -> dict[str, float]:
    """get_state_history of a thread, whole unless it takes over `budget`
    seconds: then the snapshots read in that time, to tell the rate."""
    t0 = time.perf_counter()
    n = 0
    for _ in graph.get_state_history(cfg):
        n += 1
        if time.perf_counter() - t0 > budget:
            return {"snapshots": n, "seconds": time.perf_counter() - t0, "complete": 0}
    return {"snapshots": n, "seconds": time.perf_counter() - t0, "complete": 1}


# -- the floor --------------------------------------------------------------------


def _p50_ms(fn: Callable[..., Any], n: int, warm: int = 50,
            prepare: Callable[[], Any] | None = None) -> float:
    """p50 in ms of n calls of fn after warm ones. With prepare, each call is
    fn(prepare()), the argument built before the clock starts."""
    def once() -> float:
        args = () if prepare is None else (prepare(),)
        t0 = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t0

    for _ in range(warm):
        once()
    samples = [once() for _ in range(n)]
    return median(samples) * 1e3


def raw_get(addr: str, path: str) -> Callable[[], None]:
    """A GET on one kept-alive socket, framed by hand: the leanest HTTP/1.1
    round trip Python can make (no parser, no headers beyond Host)."""
    import socket

    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = f"GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n".encode()
    sock.settimeout(10)
    buf = b""

    def recv() -> bytes:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError(f"{addr} closed the connection")
        return data

    def get() -> None:
        nonlocal buf
        sock.sendall(req)
        while b"\r\n\r\n" not in buf:
            buf += recv()
        head, _, rest = buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += recv()
        buf = rest[length:]

    return get


def client_get(url: str, path: str) -> Callable[[], None]:
    """A GET through the client's own HTTP stack (its libcurl pool)."""
    from saver_client._http import SyncPool, Timeout

    pool = SyncPool(url, Timeout(5.0, 5.0))
    return lambda: pool.send("GET", path, None, {"Accept": "application/msgpack"}) and None


def fsync_ms(directory: str, n: int) -> float:
    """One fdatasync of a 4 KB write, as a commit of a small write makes."""
    import os

    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        block = b"x" * 4096
        i = 0

        def sync() -> None:
            nonlocal i
            os.pwrite(fd, block, (i % 64) * 4096)
            i += 1
            os.fdatasync(fd)

        return _p50_ms(sync, n, warm=20)
    finally:
        os.close(fd)
        os.unlink(path)


def put_p50(saver: BaseCheckpointSaver[Any], tag: str, n: int) -> float:
    """p50 of a checkpoint put (saver_ops's workload) at one caller; as there,
    the put's arguments are built before the clock starts."""
    w = ThreadWriter(saver, f"floor-{tag}", seed=9)
    return _p50_ms(lambda args: saver.put(*args), n, prepare=w.next)
