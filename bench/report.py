"""The benchmark's output: one table (printed and written to bench/results/),
the targets with their ratios, the JSON of every figure, and the plot of the
chat loop's time per turn."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import SAVERS
from store import STORES

RESULTS = Path(__file__).resolve().parent / "results"

WRITE_OPS = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}

# Ratio columns: (header, ours, anchor).
RATIOS = [
    ("emb ÷ SQLite", "ours_bolt", "sqlite"),
    ("emb ÷ PG", "ours_bolt", "postgres"),
    ("dyn ÷ AWS", "ours_dynamo", "aws"),
]


# -- storage counts ------------------------------------------------------------------


def count_delta(prev: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for svc, ops in now.items():
        out[svc] = {}
        for op, n in ops.items():
            before = (prev.get(svc) or {}).get(op) or {}
            d = {k: v - before.get(k, 0) for k, v in n.items()}
            if d.get("requests"):
                out[svc][op] = d
    return out


def _turn(delta: dict[str, Any]) -> dict[str, Any]:
    ddb = delta.get("dynamodb", {})
    s3 = delta.get("s3", {})
    return {
        "ddb_requests": sum(n["requests"] for n in ddb.values()),
        "ddb_write_requests": sum(n["requests"] for op, n in ddb.items() if op in WRITE_OPS),
        "ddb_by_op": {op: n["requests"] for op, n in sorted(ddb.items())},
        "items_written": sum(n["items_written"] for n in ddb.values()),
        "item_bytes": sum(n["item_bytes_written"] for n in ddb.values()),
        "write_request_bytes": sum(n["request_bytes"] for op, n in ddb.items() if op in WRITE_OPS),
        "read_response_bytes": sum(n["response_bytes"] for op, n in ddb.items() if op not in WRITE_OPS),
        "wcu": sum(n["wcu"] for n in ddb.values()),
        "billed_wcu": sum(n["billed_wcu"] for n in ddb.values()),
        "ddb_ms": sum(n.get("upstream_us", 0) for n in ddb.values()) / 1e3,
        "ddb_ms_by_op": {op: n.get("upstream_us", 0) / 1e3 for op, n in sorted(ddb.items())},
        "s3_requests": sum(n["requests"] for n in s3.values()),
        "s3_by_op": {op: n["requests"] for op, n in sorted(s3.items())},
    }


def storage_summary(per_turn: list[dict[str, Any]], turn_ms: list[float]) -> dict[str, Any]:
    turns = [_turn(d) for d in per_turn]
    for t, ms in zip(turns, turn_ms):
        t["turn_ms"] = ms
    numeric = [k for k, v in turns[0].items() if isinstance(v, (int, float))]
    mean = {k: sum(t[k] for t in turns) / len(turns) for k in numeric}
    return {"mean": mean, "last": turns[-1], "turns": turns}


# -- the table -------------------------------------------------------------------------


def _fmt(v: Any, unit: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if unit == "ops/s":
        return f"{v:,.0f}"
    if unit in ("B", "req", "WCU", "MB"):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _ratio(row: dict[str, Any], ours: str, anchor: str) -> str:
    a, b = row.get(ours), row.get(anchor)
    if a is None or b is None or not b or any(isinstance(x, float) and math.isnan(x) for x in (a, b)):
        return ""
    return f"{a / b:.2f}x"


def floor_text(r: dict[str, Any]) -> str:
    """The floor under a put, and what ours adds above it."""
    f = r.get("floor") or {}
    if not f:
        return "not measured"
    rows = [
        ("a loopback GET, hand-framed on a raw socket (bare net/http handler)", f["echo_raw_ms"]),
        ("the same GET through the client's HTTP stack (libcurl)", f["echo_client_ms"]),
        ("GET /healthz through the client and the service's whole HTTP stack (an empty handler)",
         f["healthz_client_ms"]),
        ("one fdatasync of a 4 KB write on this disk", f["fsync_ms"]),
        ("HTTPSaver.put to the service with the store stubbed (client, HTTP, decoding, validation)",
         f["put_stubbed_ms"]),
        ("HTTPSaver.put to the embedded store", f["put_ours_ms"]),
        ("PostgresSaver.put (same checkpoints)", f["put_postgres_ms"]),
        ("SqliteSaver.put (same checkpoints)", f["put_sqlite_ms"]),
    ]
    lines = ["| what | p50 ms |", "|---|---|"] + [f"| {k} | {v:.3f} |" for k, v in rows]
    above = f["put_ours_ms"] - f["echo_raw_ms"] - f["fsync_ms"]
    store = f["put_ours_ms"] - f["put_stubbed_ms"]
    lines.append(
        f"\nAbove the physical floor (a round trip + one fsync = {f['echo_raw_ms'] + f['fsync_ms']:.3f} ms), "
        f"our put spends {above:.3f} ms: {f['put_stubbed_ms'] - f['echo_raw_ms']:.3f} ms in the client and the "
        f"service's HTTP and decoding, {store - f['fsync_ms']:.3f} ms in the store besides its fsync."
    )
    return "\n".join(lines)


def rows(r: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, unit, {saver: value}) for every line of the table."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    ops = r.get("ops") or {}
    for conc in ("1", "16"):
        for op in ("put", "put_writes", "get_tuple", "list"):
            label = {"get_tuple": "get_tuple(latest)", "list": "list(limit 10)"}.get(op, op)
            for stat, unit in (("p50_ms", "ms"), ("p99_ms", "ms"), ("ops_per_sec", "ops/s")):
                vals = {s: (ops.get(s, {}).get(conc, {}).get(op) or {}).get(stat) for s in SAVERS}
                name = {"p50_ms": "p50", "p99_ms": "p99", "ops_per_sec": "ops/s"}[stat]
                out.append((f"{label}, {conc} caller{'s' if conc != '1' else ''}: {name}", unit, vals))
    g = r.get("graphs") or {}
    steps = g.get("supersteps", {})
    for key, label in (
        ("seq_ms_per_step", f"(a) 7-node sequence: per superstep ({steps.get('a', '?')}/run)"),
        ("chat_ms_per_turn", "(b) 50-turn chat: per turn (mean of 50)"),
        ("fanout_ms_per_step", f"(c) Send fan-out x10: per superstep ({steps.get('c', '?')}/run)"),
    ):
        out.append((label, "ms", {s: (g.get(s) or {}).get(key) for s in SAVERS}))
    out.append(("(b) chat: turn 50", "ms", {
        s: ((g.get(s) or {}).get("chat_turn_ms") or [None])[-1] for s in SAVERS}))
    out.append(("(b) chat: CPU per turn, this Python process", "ms", {
        s: (g.get(s) or {}).get("chat_cpu_client_ms") for s in SAVERS}))
    out.append(("(b) chat: CPU per turn, saver service (ours)", "ms", {
        s: (g.get(s) or {}).get("chat_cpu_service_ms") for s in SAVERS}))
    out.append(("(b) chat: CPU per turn, database server (dynoxide, PostgreSQL)", "ms", {
        s: (g.get(s) or {}).get("chat_cpu_db_ms") for s in SAVERS}))

    def cpu_total(s: str) -> float | None:
        v = g.get(s) or {}
        parts = [v.get(k) for k in ("chat_cpu_client_ms", "chat_cpu_service_ms", "chat_cpu_db_ms")]
        return None if any(p is None for p in parts) else sum(parts)

    out.append(("(b) chat: CPU per turn, all of the above", "ms", {s: cpu_total(s) for s in SAVERS}))
    st = r.get("storage") or {}
    for key, unit, label in (
        ("ddb_requests", "req", "DynamoDB requests"),
        ("item_bytes", "B", "item bytes written"),
        ("write_request_bytes", "B", "write request bytes"),
        ("read_response_bytes", "B", "read response bytes"),
        ("wcu", "WCU", "WCU (1 per started KB per item)"),
        ("billed_wcu", "WCU", "WCU billed (transactions x2)"),
        ("s3_requests", "req", "S3 requests"),
    ):
        for when, what in (("mean", "per turn (mean)"), ("last", "at turn 50")):
            vals = {s: (st.get(s) or {}).get(when, {}).get(key) for s in SAVERS if s in st}
            out.append((f"(b) on DynamoDB: {label}, {what}", unit, vals))
    if st:
        added = next((v.get("rtt_added_ms") for v in st.values() if v.get("rtt_added_ms")), None)
        out.append((f"(b) on DynamoDB, {added or '?'} ms added per DynamoDB request: per turn (mean of 50)", "ms",
                    {s: (st.get(s) or {}).get("rtt_ms_per_turn") for s in SAVERS if s in st}))
    gr = r.get("growth") or {}
    sizes = sorted({int(k) for v in gr.values() for k in v}, key=int)
    for q, label in (
        ("get_tuple", "get_tuple(latest)"),
        ("list10", "list(limit 10)"),
        ("list10_all_ns", "list(limit 10), no namespace"),
        ("live_path", "tree: whole live path"),
        ("children", "tree: children of the head"),
        ("leaves", "tree: leaves"),
        ("abandoned", "tree: abandoned branches"),
        ("context50", "tree: resume_context(limit=50)"),
    ):
        for size in sizes:
            vals = {s: (gr.get(s, {}).get(str(size)) or {}).get(q) for s in SAVERS}
            if any(v is not None for v in vals.values()):
                out.append((f"growth: {label} at {size:,} checkpoints", "ms", vals))
    d = r.get("delta") or {}
    if d:
        n = d.get("turns", "?")
        for m in d.get("marks", []):
            out.append((f"(d) DeltaChannel chat: turn {m}", "ms", {s: (d.get(s) or {}).get(f"turn{m}_ms") for s in SAVERS}))
        marks = d.get("marks", [])
        if len(marks) >= 2:
            # What each saver's turn grew by: LangGraph's own share (decoding
            # and replaying the history, the add_messages reducer) is what
            # InMemorySaver's column grows by; the rest is the saver's.
            first, last = marks[0], marks[-1]

            def grew(s: str) -> float | None:
                v = d.get(s) or {}
                a, b = v.get(f"turn{first}_ms"), v.get(f"turn{last}_ms")
                return None if a is None or b is None else b - a

            out.append((f"(d) DeltaChannel chat: turn {last} less turn {first}", "ms", {s: grew(s) for s in SAVERS}))
        for key, unit, label in (("calls", "req", "saver calls"), ("http", "req", "HTTP requests (ours)"),
                                 ("http_bytes", "B", "bytes the service sent (ours)"),
                                 ("ddb", "req", "DynamoDB requests"), ("ddb_bytes", "B", "DynamoDB bytes read")):
            for m in d.get("marks", []):
                vals = {s: (d.get(s) or {}).get(f"turn{m}_{key}") for s in SAVERS}
                if any(v is not None for v in vals.values()):
                    out.append((f"(d) DeltaChannel chat: {label} per turn at turn {m}", unit, vals))
            vals = {s: (d.get(s) or {}).get(f"{key}_max") for s in SAVERS}
            if any(v is not None for v in vals.values()):
                out.append((f"(d) DeltaChannel chat: {label}, the most in any turn", unit, vals))
            vals = {s: (d.get(s) or {}).get(f"plain_{key}") for s in SAVERS}
            if any(v is not None for v in vals.values()):
                out.append((f"(b) plain chat: {label} per turn", unit, vals))

        def hist(s: str) -> float | None:
            h = (d.get(s) or {}).get("history")
            return h["seconds"] * 1e3 if h and h.get("complete") else None

        out.append((f"(d) get_state_history of the {n}-turn thread", "ms", {s: hist(s) for s in SAVERS}))
        out.append((f"(d) get_state_history of the {n}-turn thread: saver calls", "req", {
            s: ((d.get(s) or {}).get("history") or {}).get("saver_calls") for s in SAVERS}))
        out.append((f"(d) get_state_history of the {n}-turn thread: HTTP requests (ours)", "req", {
            s: ((d.get(s) or {}).get("history") or {}).get("http_requests") for s in ("ours_bolt", "ours_dynamo")}))
        out.append((f"(d) get_state_history, snapshots per second (when not read whole in {60:.0f} s)", "ops/s", {
            s: (h["snapshots"] / h["seconds"] if h and not h.get("complete") and h["seconds"] else None)
            for s, h in ((s, (d.get(s) or {}).get("history")) for s in SAVERS)}))
    svc = r.get("service") or {}
    stores = {"bolt": "ours_bolt", "dynamodb": "ours_dynamo"}
    levels = [lv["conns"] for lv in (svc.get("bolt") or {}).get("levels", [])]
    for i, conns in enumerate(levels):
        for stat, unit, name in (("ops_per_sec", "ops/s", "ops/s"), ("p50_ms", "ms", "p50"), ("p99_ms", "ms", "p99")):
            vals = {}
            for store, col in stores.items():
                lv = (svc.get(store) or {}).get("levels", [])
                if i < len(lv):
                    vals[col] = lv[i][stat]
            out.append((f"service alone, {conns} conn{'s' if conns > 1 else ''}: {name}", unit, vals))
    out.append(("service alone: peak RSS", "MB", {
        col: (svc.get(store) or {}).get("peak_rss_mb") for store, col in stores.items()}))
    return out


def table(r: dict[str, Any], measured_only: bool = False) -> str:
    head = ["measure", "unit", *SAVERS.values(), *(h for h, _, _ in RATIOS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, unit, vals in rows(r):
        if measured_only and all(v is None for v in vals.values()):
            continue
        cells = [label, unit, *(_fmt(vals.get(s), unit) for s in SAVERS)]
        cells += [_ratio(vals, ours, anchor) for _, ours, anchor in RATIOS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- the Store ---------------------------------------------------------------------------

# Ratio columns of the Store table: (header, ours, anchor).
STORE_RATIOS = [
    ("emb ÷ PG", "ours_bolt", "postgres"),
    ("emb ÷ SQLite", "ours_bolt", "sqlite"),
    ("emb ÷ mem", "ours_bolt", "memory"),
    ("dyn ÷ PG", "ours_dynamo", "postgres"),
]

STORE_OPS = {
    "get": "get",
    "put": "put (an update, one vector)",
    "put_plain": "put (an update, items without vectors)",
    "search_filter": "search, filtered to 10 items",
    "search_query": "search, semantic (top 10)",
    "search_filter_plain": "search, filtered to 10 items, items without vectors",
}


def store_rows(r: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    st = r.get("store") or {}
    ops = st.get("ops") or {}
    n = st.get("items", 0)
    out: list[tuple[str, str, dict[str, Any]]] = []
    for op, label in STORE_OPS.items():
        for stat in ("p50_ms", "p99_ms"):
            vals = {s: (ops.get(s, {}).get(op) or {}).get(stat) for s in STORES}
            out.append((f"{label}, namespace of {n:,}: {stat[:3]}", "ms", vals))
    gr = st.get("growth") or {}
    sizes = sorted({int(k) for v in gr.values() for k in v})
    for size in sizes:
        out.append((f"growth: semantic search (top 10) p50 at {size:,} items", "ms",
                    {s: (gr.get(s, {}).get(str(size)) or {}).get("p50_ms") for s in STORES}))
    rq = st.get("requests") or {}
    for op, label in (("get", "get"), ("put", "put"), ("search_filter", f"search, filtered, namespace of {n:,}"),
                      ("search_query", f"search, semantic, namespace of {n:,}"),
                      ("search_query_small", f"search, semantic, a 10-item namespace beside the {n:,}")):
        if op in rq:
            out.append((f"DynamoDB requests: {label}", "req", {"ours_dynamo": rq[op]["requests"]}))
    return out


def store_table(r: dict[str, Any]) -> str:
    head = ["measure", "unit", *STORES.values(), *(h for h, _, _ in STORE_RATIOS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, unit, vals in store_rows(r):
        cells = [label, unit, *(_fmt(vals.get(s), unit) for s in STORES)]
        cells += [_ratio(vals, ours, anchor) for _, ours, anchor in STORE_RATIOS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def store_targets(r: dict[str, Any], add: Callable[..., None]) -> None:
    """Issue 19's Store targets: the embedded store's p50s against
    PostgresStore, SqliteStore and InMemoryStore in the same run, DynamoDB's
    requests per op, and the largest namespace searched within the target."""
    st = r.get("store")
    if not st:
        return
    ops = st.get("ops") or {}
    n = st.get("items", 0)

    def p50(s: str, op: str) -> float | None:
        return (ops.get(s, {}).get(op) or {}).get("p50_ms")

    for op, anchor, limit, what in (
        ("get", "postgres", 1.0, "get"),
        ("put", "postgres", 1.0, "put"),
        # PostgresStore has no index here, and its put writes no vector: the
        # same update of an item without one, like for like (as the filtered
        # search below); the put above stays the target, vector and all.
        ("put_plain", "postgres", 1.0, "put of an item without vectors (as PostgresStore's)"),
        ("search_filter", "postgres", 1.0, f"filtered search of 10 in {n:,}"),
        ("search_filter_plain", "postgres", 1.0, f"filtered search of 10 in {n:,} items without vectors"),
        ("search_query", "sqlite", 1.0, f"semantic search ({st.get('dims')} dims, top 10) over {n:,}"),
        ("search_query", "memory", 0.5, f"semantic search ({st.get('dims')} dims, top 10) over {n:,}"),
    ):
        a, b = p50("ours_bolt", op), p50(anchor, op)
        name = f"Store, embedded: {what} p50 <= {limit}x {STORES[anchor]}"
        if a is None or b is None or not b:
            add(name, None, limit, "")
        else:
            add(name, a / b, limit, f"{a:.3f} ms vs {b:.3f} ms")
    rq = st.get("requests") or {}
    for op, key, what in (("get", "requests", "get = 1 request"), ("put", "writes", "put = 1 write request"),
                          ("search_query_small", "requests",
                           f"semantic search of a 10-item namespace beside {n:,} others = 1 request")):
        v = (rq.get(op) or {}).get(key)
        detail = f"{v} ({(rq.get(op) or {}).get('by_op')})" if v is not None else ""
        add(f"Store, DynamoDB: {what}", None if v is None else float(v), 1.0, detail)
    # Growth: at each size, the embedded store against SqliteStore and
    # InMemoryStore at that size; met when both ratios are.
    gr = st.get("growth") or {}
    ours, sq, mem = gr.get("ours_bolt") or {}, gr.get("sqlite") or {}, gr.get("memory") or {}
    for size in sorted(ours, key=int):
        o = (ours[size] or {}).get("p50_ms")
        q, m = (sq.get(size) or {}).get("p50_ms"), (mem.get(size) or {}).get("p50_ms")
        name = f"Store, embedded: semantic search over {int(size):,} p50 <= 1.0x SqliteStore and <= 0.5x InMemoryStore"
        if not (o and q and m):
            add(name, None, 1.0, "")
            continue
        add(name, max(o / q, o / m / 0.5), 1.0,
            f"{o:.2f} ms vs {q:.2f} ms ({o / q:.2f}x) and {m:.2f} ms ({o / m:.2f}x); ratio: the worse of "
            "the two, each over its limit")


# -- targets ---------------------------------------------------------------------------


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(name: str, ratio: float | None, limit: float, detail: str, higher: bool = False) -> None:
        if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
            out.append({"target": name, "ratio": None, "limit": limit, "met": False, "detail": "not measured"})
            return
        met = ratio >= limit if higher else ratio <= limit
        out.append({"target": name, "ratio": ratio, "limit": limit, "met": met, "detail": detail})

    def compare(name: str, limit: float, values: Callable[[], tuple[float, float]],
                detail: Callable[[float, float], str] = lambda a, b: f"{a:.2f} ms vs {b:.2f} ms") -> None:
        """A target on the ratio of two figures, "not measured" under the same
        name when either is missing."""
        try:
            a, b = values()
            add(name, a / b, limit, detail(a, b))
        except (KeyError, TypeError, ZeroDivisionError):
            add(name, None, limit, "")

    def per_turn(a: float, b: float) -> str:
        return f"{a:.2f} ms vs {b:.2f} ms per turn"

    g = r.get("graphs") or {}
    st = r.get("storage") or {}
    ops = r.get("ops") or {}
    compare("(b) chat on DynamoDB: time per turn <= 0.5x DynamoDBSaver", 0.5,
            lambda: (g["ours_dynamo"]["chat_ms_per_turn"], g["aws"]["chat_ms_per_turn"]), per_turn)
    compare("(b) bytes written at turn 50 <= 0.2x DynamoDBSaver", 0.2,
            lambda: (st["ours_dynamo"]["last"]["item_bytes"], st["aws"]["last"]["item_bytes"]),
            lambda a, b: f"{a:,} B vs {b:,} B of items")
    gr = r.get("growth") or {}
    for s in ("ours_bolt", "ours_dynamo"):
        pts = gr.get(s) or {}
        sizes = sorted(pts, key=int)
        if len(sizes) >= 2 and "get_tuple" in pts[sizes[0]] and "get_tuple" in pts[sizes[-1]]:
            lo, hi = pts[sizes[0]]["get_tuple"], pts[sizes[-1]]["get_tuple"]
            add(f"{SAVERS[s]}: get_tuple(latest) at {int(sizes[-1]):,} <= 1.3x at {sizes[0]}", hi / lo, 1.3,
                f"{hi:.2f} ms vs {lo:.2f} ms")
        else:
            add(f"{SAVERS[s]}: get_tuple(latest) growth <= 1.3x", None, 1.3, "")
    # Tree queries at 10,000 checkpoints, against fixed limits in ms.
    for s, small, path in (("ours_bolt", 10.0, 40.0), ("ours_dynamo", 100.0, 300.0)):
        top = (gr.get(s) or {}).get("10000") or {}
        for q, label, limit in (("live_path", "whole live path", path), ("children", "children", small),
                                ("leaves", "leaves", small), ("abandoned", "abandoned", small),
                                ("context50", "resume_context(limit=50)", small)):
            v = top.get(q)
            add(f"{SAVERS[s]}: tree {label} at 10,000 checkpoints <= {limit:g} ms",
                None if v is None else v / limit, 1.0, "" if v is None else f"{v:.2f} ms")
    # Per operation at one caller: against in-process SQLite, and against
    # PostgresSaver, the networked peer (the hop's cost).
    for anchor, label, limits in (
        ("sqlite", "SqliteSaver", {"put": "2", "put_writes": "2", "get_tuple": "2", "list": "2"}),
        ("postgres", "PostgresSaver", {"put": "1.5", "put_writes": "1.5", "get_tuple": "1.0", "list": "1.0"}),
    ):
        for op, limit in limits.items():
            compare(f"embedded: {op} p50 (1 caller) <= {limit}x {label}", float(limit),
                    lambda op=op, anchor=anchor: (ops["ours_bolt"]["1"][op]["p50_ms"], ops[anchor]["1"][op]["p50_ms"]),
                    lambda a, b: f"{a:.3f} ms vs {b:.3f} ms")
    # The depth issue's (21) tighter limits on the same two figures.
    for op, limit in (("put", "0.9"), ("put_writes", "1.0")):
        compare(f"depth issue: embedded {op} p50 (1 caller) <= {limit}x PostgresSaver", float(limit),
                lambda op=op: (ops["ours_bolt"]["1"][op]["p50_ms"], ops["postgres"]["1"][op]["p50_ms"]),
                lambda a, b: f"{a:.3f} ms vs {b:.3f} ms")
    for key, what in (("seq_ms_per_step", "graph (a) per superstep"), ("chat_ms_per_turn", "chat (b) per turn")):
        compare(f"embedded: {what} <= 1.2x PostgresSaver", 1.2,
                lambda key=key: (g["ours_bolt"][key], g["postgres"][key]))
    compare("embedded: client CPU per chat turn <= 1.0x PostgresSaver's Python CPU", 1.0,
            lambda: (g["ours_bolt"]["chat_cpu_client_ms"], g["postgres"]["chat_cpu_client_ms"]))
    added = (st.get("ours_dynamo") or {}).get("rtt_added_ms")
    delay = f"{added} ms added" if added is not None else "a round trip added"
    compare(f"(b) chat on DynamoDB, {delay} per request: time per turn <= 0.5x DynamoDBSaver", 0.5,
            lambda: (st["ours_dynamo"]["rtt_ms_per_turn"], st["aws"]["rtt_ms_per_turn"]), per_turn)
    d = r.get("delta") or {}
    if d:
        last, first = d["marks"][-1], d["marks"][0]
        ob, od = d.get("ours_bolt") or {}, d.get("ours_dynamo") or {}
        try:
            a, b, p = ob[f"turn{last}_http"], ob["http_after_snapshot"], ob["plain_http"]
            top = ob["http_max"]
            add(f"(d) embedded: HTTP requests per turn flat (turn {last} <= just after the first snapshot)",
                a / b, 1.0, f"{a:g} at turn {last}, {b:g} after the first snapshot, {ob[f'turn{first}_http']:g} "
                f"at turn {first}")
            add("(d) embedded: HTTP requests in any turn <= the plain chat's + 1", top / (p + 1), 1.0,
                f"at most {top} vs {p:g} + 1")
        except (KeyError, TypeError, ZeroDivisionError):
            add("(d) embedded: HTTP requests per turn flat and <= plain + 1", None, 1.0, "")
        try:
            a, b = ob[f"turn{last}_ms"], (d["postgres"] or {})[f"turn{last}_ms"]
            add(f"(d) embedded: time per turn at turn {last} <= 1.5x PostgresSaver", a / b, 1.5,
                f"{a:.2f} ms vs {b:.2f} ms")
        except (KeyError, TypeError, ZeroDivisionError):
            add(f"(d) embedded: time per turn at turn {last} <= 1.5x PostgresSaver", None, 1.5, "")
        for store, o, limit in (("embedded", ob, 1.2), ("DynamoDB", od, 3.0)):
            what = f"(d) {store}: get_state_history <= {limit:g}x SqliteSaver"
            try:
                ha, hb = o["history"], (d["sqlite"] or {})["history"]
                a, b = ha["seconds"], hb["seconds"]
                add(what, a / b if ha["complete"] else None, limit,
                    f"{a * 1e3:.0f} ms vs {b * 1e3:.0f} ms for {ha['snapshots']} snapshots")
            except (KeyError, TypeError, ZeroDivisionError):
                add(what, None, limit, "")
        try:
            a, b = od[f"turn{last}_ms"], od[f"turn{first}_ms"]
            add(f"(d) DynamoDB: time per turn at turn {last} <= 1.3x turn {first}", a / b, 1.3,
                f"{a:.2f} ms vs {b:.2f} ms")
            p = (d["postgres"] or {})[f"turn{last}_ms"]
            add(f"(d) DynamoDB: time per turn at turn {last} <= 2x PostgresSaver", a / p, 2.0,
                f"{a:.2f} ms vs {p:.2f} ms")
        except (KeyError, TypeError, ZeroDivisionError):
            add(f"(d) DynamoDB: time per turn at turn {last} <= 1.3x turn {first} and <= 2x PostgresSaver",
                None, 1.3, "")
        try:
            a, b, p = od[f"turn{last}_ddb"], od["ddb_after_snapshot"], od["plain_ddb"]
            top = od["ddb_max"]
            add(f"(d) DynamoDB: requests per turn flat (turn {last} <= just after the first snapshot)", a / b, 1.0,
                f"{a:g} at turn {last}, {b:g} after the first snapshot, {od[f'turn{first}_ddb']:g} at turn {first}")
            add("(d) DynamoDB: requests in any turn <= the plain chat's + 3", top / (p + 3), 1.0,
                f"at most {top} vs {p:g} + 3")
        except (KeyError, TypeError, ZeroDivisionError):
            add("(d) DynamoDB: requests per turn flat and <= plain + 3", None, 1.0, "")
    svc = (r.get("service") or {}).get("bolt") or {}
    ok = [lv for lv in svc.get("levels", []) if lv["p99_ms"] < 10 and not lv["errors"]]
    if svc.get("levels"):
        best = max(ok, key=lambda lv: lv["ops_per_sec"]) if ok else None
        detail = (f"{best['ops_per_sec']:,.0f} ops/s at {best['conns']} conns, p99 {best['p99_ms']:.1f} ms"
                  if best else "no level had p99 under 10 ms")
        add("service, embedded: >= 5,000 mixed ops/s at p99 < 10 ms (ratio = ops/s / 5,000)",
            (best["ops_per_sec"] / 5000) if best else 0.0, 1.0, detail, higher=True)
        add("depth issue: service, embedded: >= 8,000 mixed ops/s at p99 < 10 ms (ratio = ops/s / 8,000)",
            (best["ops_per_sec"] / 8000) if best else 0.0, 1.0, detail, higher=True)
    store_targets(r, add)
    return out


def targets_text(ts: list[dict[str, Any]]) -> str:
    lines = []
    for t in ts:
        mark = "MET " if t["met"] else "MISS"
        ratio = "—" if t["ratio"] is None else f"{t['ratio']:.2f}"
        lines.append(f"- {mark} {t['target']}: ratio {ratio} (limit {t['limit']}); {t['detail']}")
    return "\n".join(lines)


# -- plot ---------------------------------------------------------------------------------


def plot(r: dict[str, Any], path: Path) -> bool:
    g = r.get("graphs") or {}
    series = {s: (g.get(s) or {}).get("chat_turn_ms") for s in SAVERS}
    if not any(series.values()):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.2), dpi=110)
    for i, (s, ys) in enumerate(series.items()):
        if ys:
            color = f"C{i}"
            xs = range(1, len(ys) + 1)
            ax.plot(xs, ys, color=color, linewidth=0.8, alpha=0.35)
            smooth = [sorted(ys[max(0, t - 2):t + 3])[len(ys[max(0, t - 2):t + 3]) // 2] for t in range(len(ys))]
            ax.plot(xs, smooth, color=color, label=SAVERS[s], linewidth=2)
    m = r["meta"]
    ax.set_title(f"50-turn chat loop, durability=sync: time per turn\n(median of {m['plan']['chat_reps']} runs; "
                 "thin: each turn, thick: 5-turn running median)", fontsize=10)
    ax.set_xlabel("turn (the message list grows by ~2 KB a turn)")
    ax.set_ylabel("ms per turn")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    mc = m["machine"]
    fig.text(0.01, 0.01, f"{m['command']}, {m['date']}; {mc['cores']} cores, {mc['cpu']}", fontsize=7, alpha=0.7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return True


# -- publish ------------------------------------------------------------------------------


def service_table(r: dict[str, Any]) -> str:
    svc = r.get("service") or {}
    lines = ["| store | conns | ops/s | p50 ms | p99 ms | put p50/p99 | put_writes p50/p99 | get p50/p99 | errors |",
             "|---|---|---|---|---|---|---|---|---|"]
    for store in ("bolt", "dynamodb"):
        for lv in (svc.get(store) or {}).get("levels", []):
            by = lv.get("by_op", {})

            def pp(op: str, by: dict[str, Any] = by) -> str:
                o = by.get(op)
                return f"{o['p50_ms']:.2f} / {o['p99_ms']:.2f}" if o else "—"

            lines.append(f"| {store} | {lv['conns']} | {lv['ops_per_sec']:,.0f} | {lv['p50_ms']:.2f} | "
                         f"{lv['p99_ms']:.2f} | {pp('put')} | {pp('put_writes')} | {pp('get')} | {lv['errors']} |")
    return "\n".join(lines)


def storage_text(r: dict[str, Any]) -> str:
    st = r.get("storage") or {}
    lines = []
    for s, v in st.items():
        last = v["last"]
        lines.append(f"- {SAVERS[s]}, turn 50: DynamoDB {last['ddb_by_op']}, S3 {last['s3_by_op'] or 'none'}")
    return "\n".join(lines)


CHECKPOINT_SECTIONS = {"floor", "ops", "graphs", "storage", "growth", "delta", "service"}


def publish(r: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    m = r["meta"]
    quick = m["mode"] == "quick"
    ran = list(m.get("sections") or [])
    stem = "quick" if quick else "bench"
    # A run of some sections only writes its own files (bench-store.md), so
    # that it never overwrites a whole run's.
    subset = bool(ran) and set(ran) != CHECKPOINT_SECTIONS | {"store"}
    if subset:
        stem += "-" + "-".join(ran)
    checkpoints = not ran or bool(set(ran) & CHECKPOINT_SECTIONS)
    png = RESULTS / f"chat_turns{'_quick' if quick else ''}{'-' + '-'.join(ran) if subset else ''}.png"
    r["targets"] = targets(r)
    if not checkpoints:
        # Only the Store ran: the checkpoint targets were not measured.
        r["targets"] = [t for t in r["targets"] if t["target"].startswith("Store")]
    elif subset:
        # Nor those of the sections that did not run: their rows are left out.
        r["targets"] = [t for t in r["targets"] if t["ratio"] is not None]
    has_plot = plot(r, png)
    mc = m["machine"]
    head = (
        f"saver benchmark ({m['mode']}): `{m['command']}`, {m['date']}, {m['seconds']:.0f} s\n\n"
        f"Machine: {mc['cores']} cores ({mc['cpu']}), {mc['memory_gb']} GB, {mc['os']}, "
        f"kernel {mc['kernel']}, Python {mc['python']}, {mc['go']}; load average at start "
        f"{mc['load_avg_start'][0]:.2f}, at end {m['load_avg_end'][0]:.2f}.\n"
        f"Versions: {', '.join(f'{k} {v}' for k, v in m['versions'].items())}.\n"
    )
    body = table(r, measured_only=subset) if checkpoints else ""
    stores = store_table(r) if r.get("store") else ""
    tgt = targets_text(r["targets"])
    print()
    print(head)
    if body:
        print(body)
        print()
    if stores:
        print(stores)
        print()
    print("Targets (ratios in this run):")
    print(tgt)
    if checkpoints:
        print()
        print("The floor under a put:")
        print(floor_text(r))
    md = [f"# {head}"]
    if body:
        md += [
            "Medians over repeated rounds with the savers interleaved; ratios are ours ÷ the anchor "
            "measured in the same run (for times lower is better, for ops/s higher). emb = HTTPSaver on "
            "the embedded store, dyn = HTTPSaver on the DynamoDB store.\n",
            body,
        ]
    if stores:
        md += [
            "\n## The Store (long-term memory)\n",
            f"BaseStore's get, put and search on a namespace of {r['store'].get('items', 0):,} items "
            f"({r['store'].get('dims')}-dim vectors, precomputed and looked up by the `embed` of one "
            "`IndexConfig` shared by every store with an index; PostgresStore has none, no pgvector here); "
            "p50 and p99 per op, the median over rounds with the stores interleaved. emb = HTTPStore on the "
            "embedded store, dyn = on the DynamoDB store; DynamoDB requests counted through the proxy, "
            "one op each.\n",
            stores,
        ]
    md += ["\n## Targets\n", tgt]
    if checkpoints:
        md += [
            "\n## The floor under a put (one caller)\n",
            floor_text(r),
            "\n## DynamoDB requests at turn 50 of the chat loop\n",
            storage_text(r),
            "\n## The service alone (Go load generator, 40% put, 10% put_writes, 50% get latest)\n",
            service_table(r),
        ]
    if has_plot:
        md.append(f"\n![time per turn]({png.name})\n")
    (RESULTS / f"{stem}.md").write_text("\n".join(md) + "\n")
    (RESULTS / f"{stem}.json").write_text(json.dumps(r, indent=1, default=str) + "\n")
    print(f"\nwritten: bench/results/{stem}.md, bench/results/{stem}.json"
          + (f", bench/results/{png.name}" if has_plot else ""))
