"""The saver benchmark: our HTTPSaver (embedded and DynamoDB stores) side by side
with AWS's DynamoDBSaver, PostgresSaver, SqliteSaver and InMemorySaver, and our
HTTPStore with InMemoryStore, SqliteStore and PostgresStore (section 7,
bench/store.py), on the same work in the same run.

    make bench         # full run, ~19 minutes on 2 cores
    make bench-quick   # smaller, two to three minutes
    bench/run.py --only store   # the Store alone (section 7), ~6 minutes

Prints one table, writes it with every figure to bench/results/ (Markdown and
JSON) and plots the chat loop's time per turn for every saver. Each figure is
a median over repeated rounds, with the savers interleaved in every round, and
is compared with the anchor measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import report  # noqa: E402
import store as st  # noqa: E402
import workloads as wl  # noqa: E402
from harness import SAVERS, log  # noqa: E402


@dataclass(frozen=True)
class Plan:
    """How much of each measurement a mode does."""

    mode: str
    rounds: int  # repetitions of ops and graphs (savers interleaved)
    ops_per_caller_1: int  # operations per caller at 1 caller
    ops_per_caller_16: int  # ... at 16 callers
    graph_runs: int  # invokes of graphs (a) and (c) per round
    chat_reps: int  # 50-turn chat loops per saver
    chat_turns: int
    growth_sizes: tuple[int, ...]
    growth_reps: int
    load_conns: tuple[int, ...]
    load_seconds: float
    load_warmup: float
    load_reps: int
    delta_turns: int  # turns of the DeltaChannel chat (d)
    delta_marks: tuple[int, ...]  # the turns reported
    delta_reps: int
    store_items: int  # items in each store's namespace (section 7)
    store_point_ops: int  # gets and puts per round
    store_search_ops: int  # searches of each kind per round
    store_budget_s: float  # most seconds an op's searches take on one store per round
    store_growth: tuple[int, ...]  # namespace sizes of the semantic search growth


PLANS = {
    "quick": Plan("quick", 1, 40, 8, 3, 1, 50, (10, 100, 1000), 10, (1, 4, 16, 64), 1.0, 0.5, 1,
                  70, (10, 50, 70), 1, 10_000, 100, 10, 5.0, (1_000, 10_000)),
    "full": Plan("full", 3, 300, 40, 10, 5, 50, (10, 100, 1000, 10000), 30,
                 (1, 2, 4, 8, 16, 32, 64), 4.0, 1.0, 3, 150, (10, 50, 150), 2,
                 10_000, 300, 40, 20.0, (1_000, 10_000, 50_000)),
}


# Round trip added to each DynamoDB request in the simulated-network chat loop
# (same-region DynamoDB answers in single-digit milliseconds).
NETWORK_MS = 3.0


def guarded(what: str, fn: Callable[[], Any]) -> Any:
    """Run one measurement; a failure is logged and leaves a gap, not a dead run."""
    try:
        return fn()
    except Exception:
        log(f"FAILED: {what}")
        traceback.print_exc()
        return None


def rotate(names: list[str], k: int) -> list[str]:
    k %= len(names)
    return names[k:] + names[:k]


def med_dicts(rounds: list[dict[str, float]]) -> dict[str, float]:
    keys = rounds[0].keys() if rounds else []
    return {k: wl.median([r[k] for r in rounds if r and k in r]) for k in keys}


# -- sections ------------------------------------------------------------------------


def bench_ops(plan: Plan, savers: dict[str, Any], run_id: str) -> dict[str, Any]:
    log("1. saver operations (put, put_writes, get_tuple, list) at 1 and 16 callers")
    per: dict[str, dict[int, list[dict[str, dict[str, float]]]]] = {s: {1: [], 16: []} for s in savers}
    names = list(savers)
    for rnd in range(plan.rounds):
        for name in rotate(names, rnd):
            for conc, n in ((1, plan.ops_per_caller_1), (16, plan.ops_per_caller_16)):
                tag = f"{run_id}-{name}-{rnd}-{conc}"
                res = guarded(f"ops {name} x{conc}", lambda: wl.saver_ops(savers[name], conc, n, tag))
                if res:
                    per[name][conc].append(res)
        log(f"   round {rnd + 1}/{plan.rounds} done")
    out: dict[str, Any] = {}
    for name, by_conc in per.items():
        out[name] = {}
        for conc, rounds in by_conc.items():
            if rounds:
                out[name][str(conc)] = {op: med_dicts([r[op] for r in rounds]) for op in wl.OPS}
    return out


def bench_graphs(plan: Plan, sv: harness.Savers, stack: harness.Stack, run_id: str) -> dict[str, Any]:
    savers = sv.savers
    log("2. graphs with durability=sync: (a) 7-node sequence, (b) 50-turn chat, (c) Send fan-out x10")
    names = list(savers)
    seq: dict[str, list[float]] = {n: [] for n in names}
    fan: dict[str, list[float]] = {n: [] for n in names}
    chat: dict[str, list[list[float]]] = {n: [] for n in names}
    cpu: dict[str, list[tuple[float, float, float]]] = {n: [] for n in names}  # client, service, db: s/turn
    steps = {}
    for rnd in range(max(plan.rounds, plan.chat_reps)):
        for name in rotate(names, rnd):
            s = savers[name]
            if rnd < plan.rounds:
                r = guarded(f"graph (a) {name}", lambda: wl.time_invokes(
                    wl.sequential_graph(s), lambda: {"log": [], "data": ""}, plan.graph_runs,
                    f"seq-{run_id}-{name}-{rnd}"))
                if r:
                    seq[name].append(wl.median(r[0]) / r[1])
                    steps["a"] = r[1]
                r = guarded(f"graph (c) {name}", lambda: wl.time_invokes(
                    wl.fanout_graph(s), lambda: {"topic": "refunds", "results": [], "summary": ""},
                    plan.graph_runs, f"fan-{run_id}-{name}-{rnd}"))
                if r:
                    fan[name].append(wl.median(r[0]) / r[1])
                    steps["c"] = r[1]
            if rnd < plan.chat_reps:
                svc_pids, db_pids = sv.backend_pids(name, stack)
                c0, s0, d0 = time.process_time(), harness.cpu_seconds(svc_pids), harness.cpu_seconds(db_pids)
                r = guarded(f"graph (b) {name}", lambda: wl.chat_loop(
                    s, plan.chat_turns, f"{run_id}-{name}-{rnd}"))
                c1, s1, d1 = time.process_time(), harness.cpu_seconds(svc_pids), harness.cpu_seconds(db_pids)
                if r:
                    chat[name].append(r)
                    n = len(r)
                    cpu[name].append(((c1 - c0) / n, (s1 - s0) / n, (d1 - d0) / n))
        log(f"   round {rnd + 1} done")
    out: dict[str, Any] = {"supersteps": steps}
    for name in names:
        turns = [wl.median([rep[t] * 1e3 for rep in chat[name]]) for t in range(plan.chat_turns)] if chat[name] else []
        out[name] = {
            "seq_ms_per_step": wl.median(seq[name]) * 1e3,
            "fanout_ms_per_step": wl.median(fan[name]) * 1e3,
            "chat_ms_per_turn": wl.median([sum(rep) / len(rep) * 1e3 for rep in chat[name]]),
            "chat_turn_ms": turns,
            "chat_cpu_client_ms": wl.median([c[0] for c in cpu[name]]) * 1e3,
            "chat_cpu_service_ms": wl.median([c[1] for c in cpu[name]]) * 1e3,
            "chat_cpu_db_ms": wl.median([c[2] for c in cpu[name]]) * 1e3,
        }
    return out


def bench_storage(plan: Plan, stack: harness.Stack, counted: dict[str, Any], run_id: str) -> dict[str, Any]:
    log("3. DynamoDB and S3 cost of the chat loop (through the counting proxy)")
    out = {}
    for name, saver in counted.items():
        per_turn: list[dict[str, Any]] = []
        prev: dict[str, Any] = {}

        def after(_turn: int) -> None:
            nonlocal prev
            now = stack.counts()
            per_turn.append(report.count_delta(prev, now))
            prev = now

        def run() -> list[float]:
            nonlocal prev
            stack.reset_counts()
            prev = stack.counts()
            return wl.chat_loop(saver, plan.chat_turns, f"{run_id}-{name}-counted", after)

        times = guarded(f"storage {name}", run)
        if times:
            out[name] = report.storage_summary(per_turn, [t * 1e3 for t in times])
            # The same loop with a network's round trip added to every
            # DynamoDB request: what request counts cost outside loopback.
            stack.set_delay(NETWORK_MS)
            try:
                slow = guarded(f"storage {name} +{NETWORK_MS} ms",
                               lambda: wl.chat_loop(saver, plan.chat_turns, f"{run_id}-{name}-rtt"))
            finally:
                stack.set_delay(0)
            if slow:
                out[name]["rtt_ms_per_turn"] = sum(slow) / len(slow) * 1e3
                out[name]["rtt_added_ms"] = NETWORK_MS
    return out


def bench_growth(plan: Plan, savers: dict[str, Any], run_id: str) -> dict[str, Any]:
    log(f"4. growth: one thread at {', '.join(map(str, plan.growth_sizes))} checkpoints")
    out: dict[str, Any] = {}
    for name, s in savers.items():
        thread = f"grow-{run_id}-{name}"
        writer = wl.ThreadWriter(s, thread, seed=5)
        out[name] = {}
        t0 = time.perf_counter()
        for size in plan.growth_sizes:
            ok = guarded(f"growth {name} to {size}", lambda: wl.grow_thread(s, writer, size) or True)
            if not ok:
                break
            res = guarded(f"growth {name} at {size}", lambda: wl.growth_point(
                s, thread, plan.growth_reps, with_tree=name.startswith("ours")))
            if res is None:
                break
            out[name][str(size)] = res
        log(f"   {SAVERS[name]}: {time.perf_counter() - t0:.1f}s")
    return out


# The turn of the DeltaChannel chat's first snapshot: LangGraph's default of
# one every 100 updates, and a turn updates the channel twice (input, reply).
SNAPSHOT_TURN = 50

# Longest a history read may take before only its rate is reported: the base
# class's walk (DynamoDBSaver) is quadratic in the thread's length.
HISTORY_BUDGET_S = 60.0


def at_mark(per_turn: list[float], mark: int) -> float:
    """Median of the five turns around turn `mark` (1-based)."""
    lo = max(0, mark - 3)
    return wl.median(per_turn[lo:lo + 5])


def bench_delta(plan: Plan, sv: harness.Savers, stack: harness.Stack, run_id: str) -> dict[str, Any]:
    log(f"6. DeltaChannel chat (d): {plan.delta_turns} turns, saver calls, HTTP and DynamoDB "
        "requests per turn, and the thread's state history")
    savers = sv.savers
    names = list(savers)
    times: dict[str, list[list[float]]] = {n: [] for n in names}
    calls: dict[str, list[tuple[int, int]]] = {}
    # HTTP response bytes per turn of our savers, from the services' metrics:
    # what a turn reads.
    sent: dict[str, list[int]] = {}
    history: dict[str, dict[str, float]] = {}
    for rnd in range(plan.delta_reps):
        for name in rotate(names, rnd):
            s = savers[name]
            counter = wl.CallCounter(s)
            per_turn: list[tuple[int, int]] = []
            url = sv.services[name].url if rnd == 0 and name in sv.services else None
            per_bytes: list[int] = []
            last_bytes = [wl.response_bytes(url) if url else 0]

            def after(_t: int) -> None:
                per_turn.append(counter.take())
                if url:
                    now = wl.response_bytes(url)
                    per_bytes.append(now - last_bytes[0])
                    last_bytes[0] = now

            try:
                r = guarded(f"delta chat {name}", lambda: wl.delta_chat_loop(
                    s, plan.delta_turns, f"{run_id}-{name}-{rnd}", after))
                if r and rnd == 0:
                    calls[name] = per_turn
                    if per_bytes:
                        sent[name] = per_bytes
                    counter.take()
                    h = guarded(f"delta history {name}", lambda: wl.read_history(r[1], r[2], HISTORY_BUDGET_S))
                    if h:
                        h["saver_calls"], h["http_requests"] = counter.take()
                        history[name] = h
            finally:
                counter.close()
            if r:
                times[name].append(r[0])
        log(f"   round {rnd + 1}/{plan.delta_reps} done")
    # The plain chat (b), counted the same way, for what a turn costs without
    # DeltaChannel.
    plain: dict[str, dict[str, float]] = {}
    for name in ("ours_bolt", "ours_dynamo"):
        counter = wl.CallCounter(savers[name])
        per_turn = []
        try:
            guarded(f"plain chat counted {name}", lambda: wl.chat_loop(
                savers[name], 12, f"{run_id}-{name}-plain-counted", lambda _t: per_turn.append(counter.take())))
        finally:
            counter.close()
        if per_turn:
            plain[name] = {"saver_calls": wl.median([c for c, _ in per_turn[2:]]),
                           "http_requests": wl.median([h for _, h in per_turn[2:]])}
    # DynamoDB requests per turn, through the counting proxy.
    ddb: dict[str, Any] = {}
    for name, saver in sv.counted.items():
        for kind in ("delta", "plain"):
            per: list[int] = []
            read: list[int] = []
            prev: dict[str, Any] = {}

            def after(_t: int) -> None:
                nonlocal prev
                now = stack.counts()
                ops = report.count_delta(prev, now).get("dynamodb", {})
                per.append(sum(n["requests"] for n in ops.values()))
                read.append(sum(n["response_bytes"] for op, n in ops.items() if op not in report.WRITE_OPS))
                prev = now

            def run() -> Any:
                nonlocal prev
                prev = stack.counts()
                if kind == "delta":
                    return wl.delta_chat_loop(saver, plan.delta_turns, f"{run_id}-{name}-counted", after)
                return wl.chat_loop(saver, 12, f"{run_id}-{name}-plain-ddb", after)

            if guarded(f"delta DynamoDB counts {name} {kind}", run):
                ddb.setdefault(name, {})[kind] = per
                ddb[name][f"{kind}_bytes"] = read
    out: dict[str, Any] = {"turns": plan.delta_turns, "marks": list(plan.delta_marks)}
    for name in names:
        reps = times[name]
        per_turn_ms = [wl.median([rep[t] * 1e3 for rep in reps]) for t in range(plan.delta_turns)] if reps else []
        c = calls.get(name, [])
        entry: dict[str, Any] = {"turn_ms": per_turn_ms, "history": history.get(name)}
        series = {"calls": [x for x, _ in c], "http": [y for _, y in c] if name.startswith("ours") else [],
                  "http_bytes": sent.get(name, [])}
        if name in ddb:
            series["ddb"] = ddb[name].get("delta", [])
            series["ddb_bytes"] = ddb[name].get("delta_bytes", [])
            if ddb[name].get("plain"):
                entry["plain_ddb"] = wl.median(ddb[name]["plain"][2:])
        for key, per in series.items():
            if not per:
                continue
            entry[f"{key}_per_turn"] = per
            for m in plan.delta_marks:
                entry[f"turn{m}_{key}"] = at_mark(per, m)
            # The most any turn took (past the thread's first two), and the
            # turns just after the first snapshot, from when every history
            # has a seed to read.
            entry[f"{key}_max"] = max(per[2:], default=None)
            entry[f"{key}_after_snapshot"] = at_mark(per, SNAPSHOT_TURN + 3)
        for m in plan.delta_marks:
            if per_turn_ms:
                entry[f"turn{m}_ms"] = at_mark(per_turn_ms, m)
        if name in plain:
            entry["plain_calls"] = plain[name]["saver_calls"]
            entry["plain_http"] = plain[name]["http_requests"]
        out[name] = entry
    return out


def bench_floor(plan: Plan, sv: harness.Savers, stack: harness.Stack, run_id: str) -> dict[str, Any]:
    """The physical floor under a put: what a round trip and a sync cost on
    this machine, without our code on top."""
    log("0. the floor: a loopback round trip, the service's empty handler, one fsync, "
        "a put with the store stubbed")
    n = plan.ops_per_caller_1 * 3
    null = stack.start_profserve("null")
    from saver_client import HTTPSaver

    ours = sv.savers["ours_bolt"]
    stubbed = HTTPSaver(null.url)
    try:
        out = {
            "echo_raw_ms": wl._p50_ms(wl.raw_get(null.pprof, "/echo"), n),
            "echo_client_ms": wl._p50_ms(wl.client_get("http://" + null.pprof, "/echo"), n),
            "healthz_client_ms": wl._p50_ms(wl.client_get(sv.services["ours_bolt"].url, "/healthz"), n),
            "fsync_ms": wl.fsync_ms(str(harness.CACHE / "run"), n),
            "put_stubbed_ms": wl.put_p50(stubbed, f"{run_id}-null", n),
            "put_ours_ms": wl.put_p50(ours, f"{run_id}-ours", n),
            "put_postgres_ms": wl.put_p50(sv.savers["postgres"], f"{run_id}-pg", n),
            "put_sqlite_ms": wl.put_p50(sv.savers["sqlite"], f"{run_id}-sqlite", n),
        }
    finally:
        stubbed.close()
        null.proc.stop()
    log("   " + ", ".join(f"{k} {v:.3f}" for k, v in out.items()))
    return out


def bench_service(plan: Plan, stack: harness.Stack) -> dict[str, Any]:
    log("5. the service alone: Go load generator, put/get mix, "
        f"{','.join(map(str, plan.load_conns))} connections")
    out: dict[str, Any] = {}
    for store in ("bolt", "dynamodb"):
        svc = stack.start_service(store, name=f"loadgen-{store}")
        reps: list[list[dict[str, Any]]] = []
        for _ in range(plan.load_reps):
            proc = subprocess.run(
                [
                    str(harness.BIN / "loadgen"),
                    "-url", svc.url,
                    "-conns", ",".join(map(str, plan.load_conns)),
                    "-duration", f"{plan.load_seconds}s",
                    "-warmup", f"{plan.load_warmup}s",
                ],
                capture_output=True, text=True, check=True, timeout=600,
            )
            reps.append([json.loads(line) for line in proc.stdout.splitlines() if line.strip()])
        levels = []
        for i, conns in enumerate(plan.load_conns):
            runs = [r[i] for r in reps]
            levels.append({
                "conns": conns,
                "ops_per_sec": wl.median([r["ops_per_sec"] for r in runs]),
                "p50_ms": wl.median([r["p50_ms"] for r in runs]),
                "p99_ms": wl.median([r["p99_ms"] for r in runs]),
                "errors": sum(r["errors"] for r in runs),
                "by_op": runs[len(runs) // 2]["by_op"],
            })
        rss = svc.proc.peak_rss_kb()
        svc.proc.stop()
        out[store] = {"levels": levels, "peak_rss_mb": (rss or 0) / 1024}
        best = max(levels, key=lambda lv: lv["ops_per_sec"])
        log(f"   {store}: best {best['ops_per_sec']:.0f} ops/s at {best['conns']} conns, "
            f"peak RSS {(rss or 0) / 1024:.0f} MB")
    return out


def bench_store(plan: Plan, sv: harness.Savers, stack: harness.Stack, run_id: str) -> dict[str, Any]:
    log(f"7. the Store: get, put, filtered and semantic search in a namespace of {plan.store_items:,} items "
        f"({st.DIMS} dims), on {', '.join(st.STORES.values())}")
    sizes = (*plan.store_growth, plan.store_items)
    vectors = st.Vectors(max(sizes), 1000)
    stores, closers = st.build_stores(sv.services, stack.pg_dsn, harness.CACHE / "run", vectors)
    names = list(st.STORES)
    ns = {name: ("users", f"u-{run_id}-{name}", "memories") for name in names}
    out: dict[str, Any] = {"items": plan.store_items, "dims": st.DIMS}
    try:
        fill_s: dict[str, float] = {}
        for name in names:
            t0 = time.perf_counter()
            if guarded(f"store fill {name}", lambda: st.fill(stores[name], ns[name], 0, plan.store_items, 1) or
                       st.fill(stores[name], st.plain(ns[name]), 0, plan.store_items, 1, index=False) or True):
                fill_s[name] = time.perf_counter() - t0
            log(f"   filled {st.STORES[name]}: {time.perf_counter() - t0:.1f}s")
        out["fill_s"] = fill_s
        per: dict[str, list[dict[str, dict[str, float]]]] = {n: [] for n in fill_s}
        for rnd in range(plan.rounds):
            res = guarded(f"store ops, round {rnd + 1}", lambda: st.store_round(
                {n: stores[n] for n in fill_s}, ns, plan.store_items, plan.store_point_ops,
                plan.store_search_ops, plan.store_budget_s, seed=100 + rnd))
            for name, r in (res or {}).items():
                per[name].append(r)
            log(f"   round {rnd + 1}/{plan.rounds} done")
        out["ops"] = {name: {op: med_dicts([r[op] for r in rounds]) for op in rounds[0]}
                      for name, rounds in per.items() if rounds}
        out["growth"] = guarded("store growth", lambda: store_growth(plan, stores, run_id))
        if "ours_dynamo" in fill_s:
            out["requests"] = guarded("store requests", lambda: store_requests(
                stack, stores["ours_dynamo_counted"], ns["ours_dynamo"], run_id))
    finally:
        for close in reversed(closers):
            guarded("closing a store", close)
    return out


def store_growth(plan: Plan, stores: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Exact semantic search (top 10) as one namespace grows, on the
    embedded store and the in-process stores that search the same way."""
    out: dict[str, Any] = {}
    for name in ("ours_bolt", "sqlite", "memory"):
        ns = ("users", f"g-{run_id}-{name}", "memories")
        have = 0
        out[name] = {}
        for size in plan.store_growth:
            t0 = time.perf_counter()
            st.fill(stores[name], ns, have, size, 2)
            have = size
            out[name][str(size)] = st.semantic_p50(stores[name], ns, plan.store_search_ops, plan.store_budget_s, 7)
            log(f"   growth {st.STORES[name]} at {size:,}: semantic p50 "
                f"{out[name][str(size)]['p50_ms']:.2f} ms (filled and measured in {time.perf_counter() - t0:.1f}s)")
    return out


def store_requests(stack: harness.Stack, store: Any, big: tuple[str, ...], run_id: str) -> dict[str, Any]:
    """DynamoDB requests of one op each, through the counting proxy: on the
    filled namespace, and a search of a 10-item namespace in the same
    partition (the same first two labels) as the filled one."""
    small = (*big[:2], "small")
    st.fill(store, small, 0, 10, 3)
    calls = {
        "get": lambda: store.get(big, "k1"),
        "put": lambda: store.put(big, "k1", st.one_value(1)),
        "search_filter": lambda: store.search(big, filter={"tag": "t1"}, limit=10),
        "search_query": lambda: store.search(big, query="q1", limit=10),
        "search_query_small": lambda: store.search(small, query="q1", limit=10),
    }
    out: dict[str, Any] = {}
    for op, call in calls.items():
        before = stack.counts()
        call()
        d = report.count_delta(before, stack.counts()).get("dynamodb", {})
        out[op] = {
            "requests": sum(n["requests"] for n in d.values()),
            "writes": sum(n["requests"] for o, n in d.items() if o in report.WRITE_OPS),
            "by_op": {o: n["requests"] for o, n in sorted(d.items())},
            "read_bytes": sum(n["response_bytes"] for o, n in d.items() if o not in report.WRITE_OPS),
        }
    log("   DynamoDB requests: " + ", ".join(f"{op} {v['by_op']}" for op, v in out.items()))
    return out


# -- main ----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    osname = platform.platform()
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    go = subprocess.run(["go", "version"], capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_gb),
        "os": osname,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "go": go.removeprefix("go version "),
        "load_avg_start": os.getloadavg(),
    }


def versions() -> dict[str, str]:
    from importlib.metadata import version

    pkgs = ["langgraph", "langgraph-checkpoint", "langgraph-checkpoint-aws",
            "langgraph-checkpoint-postgres", "langgraph-checkpoint-sqlite", "saver-client", "boto3",
            "sqlite-vec", "pysqlite3-binary"]
    out = {p: version(p) for p in pkgs}
    pg = subprocess.run(["bash", "-c", "ls /usr/lib/postgresql | sort -V | tail -1"],
                        capture_output=True, text=True).stdout.strip()
    out["postgresql"] = pg
    return out


ALL_SECTIONS = ("floor", "ops", "graphs", "storage", "growth", "delta", "service", "store")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the smaller run (make bench-quick)")
    ap.add_argument("--only", default=",".join(ALL_SECTIONS),
                    help="comma-separated sections to run (default: all; a subset writes its own "
                    "result files, e.g. bench-store.md)")
    args = ap.parse_args()
    plan = PLANS["quick" if args.quick else "full"]
    sections = set(args.only.split(","))
    unknown = sections - set(ALL_SECTIONS)
    if unknown:
        ap.error(f"unknown sections {', '.join(sorted(unknown))}; the sections are {', '.join(ALL_SECTIONS)}")
    command = "make bench-quick" if args.quick else "make bench"
    if sections != set(ALL_SECTIONS):
        command = f"bench/run.py{' --quick' if args.quick else ''} --only {','.join(s for s in ALL_SECTIONS if s in sections)}"
    run_id = uuid.uuid4().hex[:8]
    started = time.time()
    results: dict[str, Any] = {
        "meta": {
            "mode": plan.mode,
            "command": command,
            "sections": [s for s in ALL_SECTIONS if s in sections],
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": machine(),
            "versions": versions(),
            "plan": asdict(plan),
        }
    }
    stack = harness.Stack(run_id)
    savers = None
    try:
        stack.start_aws()
        stack.start_pg()
        stack.start_proxy()
        savers = harness.build_savers(stack)
        log(f"savers ready: {', '.join(SAVERS.values())}")
        if "floor" in sections:
            results["floor"] = guarded("floor", lambda: bench_floor(plan, savers, stack, run_id))
        if "ops" in sections:
            results["ops"] = bench_ops(plan, savers.savers, run_id)
        if "graphs" in sections:
            results["graphs"] = bench_graphs(plan, savers, stack, run_id)
        if "storage" in sections:
            results["storage"] = bench_storage(plan, stack, savers.counted, run_id)
        if "growth" in sections:
            results["growth"] = bench_growth(plan, savers.savers, run_id)
        if "delta" in sections:
            results["delta"] = bench_delta(plan, savers, stack, run_id)
        if "service" in sections:
            results["service"] = guarded("service", lambda: bench_service(plan, stack))
        if "store" in sections:
            results["store"] = bench_store(plan, savers, stack, run_id)
    finally:
        if savers is not None:
            savers.close()
        stack.close()
    results["meta"]["seconds"] = round(time.time() - started, 1)
    results["meta"]["load_avg_end"] = os.getloadavg()
    report.publish(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
