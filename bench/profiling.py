"""Profile the service and the client on the benchmark's chat loop (b).

    .cache/bench-venv/bin/python bench/profiling.py [--store embedded|dynamodb] [--turns 50]
        [--client]
    .cache/bench-venv/bin/python bench/profiling.py --store-op search_query [--items 10000]
        [--store embedded|dynamodb] [--client]
    .cache/bench-venv/bin/python bench/profiling.py --delta-history [--turns 150]
        [--store embedded|dynamodb] [--client]
    .cache/bench-venv/bin/python bench/profiling.py --delta-turns [--turns 150]
        [--store embedded|dynamodb]

Starts the local AWS stack (bench/aws.sh) when the store is dynamodb, runs
bench/profserve (the service with pprof), runs the 50-turn chat loop through
HTTPSaver while taking a CPU profile of the service, and prints the profile's
top functions (`go tool pprof -top`), the per-turn time and, with --client, the
client's cProfile. With --store-op, the same for one op of the Store
benchmark (bench/store.py: get, put, search_filter or search_query) on a
namespace of --items items, filled before the profile starts. With
--delta-history, the same for get_state_history of a DeltaChannel chat of
--turns turns (benchmark (d)), the chat run before the profile starts. With
--delta-turns, where a DeltaChannel chat turn's time goes, early and late: the
chat of benchmark (d) runs --turns turns through HTTPSaver and InMemorySaver
side by side, the client's cProfile and the service's CPU profile taken over
turns 1-10 and over the last ten, and the time of each turn split into the
client's parts (see DELTA_PARTS). Profiles are kept in .cache/bench/prof/.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import store as st  # noqa: E402
import workloads as wl  # noqa: E402
from harness import BIN, CACHE, ROOT, log, poll, spawn  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    # bolt: the embedded store's former name, still taken.
    ap.add_argument("--store", default="embedded", choices=["embedded", "bolt", "dynamodb"])
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--loops", type=int, default=3, help="chat loops (threads) to run")
    ap.add_argument("--client", action="store_true", help="also cProfile the client")
    ap.add_argument("--store-op", choices=st.OPS, help="profile this Store op instead of the chat loop")
    ap.add_argument("--items", type=int, default=10_000, help="items in the Store op's namespace")
    ap.add_argument("--seconds", type=int, default=15, help="the Store op's profile window")
    ap.add_argument("--delta-history", action="store_true",
                    help="profile get_state_history of a DeltaChannel chat of --turns turns")
    ap.add_argument("--delta-turns", action="store_true",
                    help="profile the first and last ten turns of a DeltaChannel chat of --turns turns")
    args = ap.parse_args()
    out = CACHE / "prof"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["go", "build", "-o", str(BIN / "profserve"), "./bench/profserve"], cwd=ROOT, check=True)
    stack = harness.Stack(f"prof{int(time.time())}")
    try:
        addr, paddr = out / "addr", out / "pprof"
        for f in (addr, paddr):
            f.unlink(missing_ok=True)
        argv = [str(BIN / "profserve"), "-store", args.store, "-addr-file", str(addr), "-pprof-addr-file", str(paddr)]
        env = {}
        if args.store != "dynamodb":
            db = out / "prof.db"
            harness.remove_store(db)
            argv += ["-db", str(db)]
        else:
            stack.start_aws()
            ddb, s3 = stack.endpoints(False)
            env = {"AWS_ENDPOINT_URL_DYNAMODB": ddb, "AWS_ENDPOINT_URL_S3": s3}
            # A bucket for offloaded values: a DeltaChannel snapshot of a long
            # chat is over DynamoDB's item limit.
            import boto3

            name = f"prof-{stack.run_id}"
            boto3.client("s3", endpoint_url=s3).create_bucket(Bucket=name)
            argv += ["-table", name, "-bucket", name]
        proc = spawn("profserve", argv, env)
        stack._stack.callback(proc.stop)
        poll("profserve", lambda: addr.exists() and paddr.exists(), proc.alive)
        url = "http://" + addr.read_text().strip()
        if args.store_op:
            return profile_store_op(args, url, paddr.read_text().strip(), out)
        if args.delta_history:
            return profile_delta_history(args, url, paddr.read_text().strip(), out)
        if args.delta_turns:
            return profile_delta_turns(args, url, paddr.read_text().strip(), out)
        from saver_client import HTTPSaver

        saver = HTTPSaver(url)
        wl.chat_loop(saver, 5, "warm")
        secs = 3600
        prof_path = out / f"cpu-{args.store}.pprof"
        result: dict[str, bytes] = {}

        def fetch() -> None:
            with urllib.request.urlopen(f"http://{paddr.read_text().strip()}/debug/pprof/profile?seconds={secs}",
                                        timeout=secs + 30) as resp:
                result["data"] = resp.read()

        # The profile runs until the loops end: pprof stops early when its
        # client goes away, so ask for a long one and cut it with a short one.
        secs = max(5, int(args.loops * args.turns * 0.08) + 5)
        t = threading.Thread(target=fetch, daemon=True)
        t.start()
        pr = cProfile.Profile() if args.client else None
        t0 = time.perf_counter()
        turns: list[float] = []
        for i in range(args.loops):
            if pr:
                pr.enable()
            turns += wl.chat_loop(saver, args.turns, f"prof-{stack.run_id}-{i}")
            if pr:
                pr.disable()
        wall = time.perf_counter() - t0
        t.join(timeout=secs + 60)
        prof_path.write_bytes(result.get("data", b""))
        log(f"{args.loops} x {args.turns} turns in {wall:.1f}s; mean turn {sum(turns) / len(turns) * 1e3:.2f} ms, "
            f"profile window {secs}s -> {prof_path}")
        top = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=40", str(BIN / "profserve"), str(prof_path)],
                             capture_output=True, text=True, cwd=ROOT)
        print(top.stdout[:8000])
        top = subprocess.run(["go", "tool", "pprof", "-top", "-cum", "-nodecount=40", str(BIN / "profserve"),
                              str(prof_path)], capture_output=True, text=True, cwd=ROOT)
        print(top.stdout[:8000])
        if pr:
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(40)
            print(s.getvalue()[:12000])
        saver.close()
    finally:
        stack.close()
    return 0


def profile_delta_history(args: argparse.Namespace, url: str, paddr: str, out: Path) -> int:
    """Run a DeltaChannel chat, then profile reading its state history."""
    from saver_client import HTTPSaver

    saver = HTTPSaver(url)
    t0 = time.perf_counter()
    _, graph, cfg = wl.delta_chat_loop(saver, args.turns, f"prof-{int(time.time())}")
    log(f"{args.turns}-turn DeltaChannel chat in {time.perf_counter() - t0:.1f}s")
    counter = wl.CallCounter(saver)
    h = wl.read_history(graph, cfg, 600)
    calls, http = counter.take()
    counter.close()
    log(f"history: {h['snapshots']} snapshots in {h['seconds']:.2f}s, {calls} saver calls, {http} HTTP requests")
    # Then the same read, repeated for as long as the profile runs.
    result: dict[str, bytes] = {}
    secs = args.seconds

    def fetch() -> None:
        with urllib.request.urlopen(f"http://{paddr}/debug/pprof/profile?seconds={secs}", timeout=secs + 30) as resp:
            result["data"] = resp.read()

    t = threading.Thread(target=fetch, daemon=True)
    t.start()
    pr = cProfile.Profile() if args.client else None
    if pr:
        pr.enable()
    reads = 0
    while t.is_alive():
        wl.read_history(graph, cfg, 600)
        reads += 1
    if pr:
        pr.disable()
    t.join()
    prof_path = out / f"cpu-delta-history-{args.store}.pprof"
    prof_path.write_bytes(result.get("data", b""))
    log(f"{reads} reads profiled -> {prof_path}")
    for extra in ([], ["-cum"]):
        top = subprocess.run(["go", "tool", "pprof", "-top", *extra, "-nodecount=35", str(BIN / "profserve"),
                              str(prof_path)], capture_output=True, text=True, cwd=ROOT)
        print(top.stdout[:7000])
    if pr:
        for key in ("tottime", "cumulative"):
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats(key).print_stats(35)
            print(s.getvalue()[:10000])
    saver.close()
    return 0


# The parts of a DeltaChannel chat turn, each the cumulative time of the
# functions (file suffix, function name) that make it, from the client's
# cProfile. They may overlap: the history decode runs inside the history call.
DELTA_PARTS = {
    "get_delta_channel_history (request, splice, decode)": [("saver_client/_checkpoint_calls.py", "get_delta_channel_history")],
    "  of which: asking the service (request, splice)": [("saver_client/_checkpoint_calls.py", "_held_delta")],
    "  of which: decoding the history's values": [("saver_client/_wire.py", "to_histories")],
    "InMemorySaver.get_delta_channel_history": [("langgraph/checkpoint/memory/__init__.py", "get_delta_channel_history"),
                                                ("langgraph/checkpoint/base/__init__.py", "get_delta_channel_history")],
    "DeltaChannel replay (the reducer over the history)": [("langgraph/pregel/_checkpoint.py", "_replay")],
    "the reducer (add_messages), replay and steps": [("langgraph/graph/message.py", "add_messages"),
                                                     ("langgraph/graph/message.py", "_add_messages")],
    "the graph's channels from the checkpoint": [("langgraph/pregel/_checkpoint.py", "channels_from_checkpoint")],
}


def _parts(stats: pstats.Stats, turns: int) -> dict[str, float]:
    """Milliseconds per turn of each DELTA_PARTS entry."""
    out = {}
    table = stats.stats  # type: ignore[attr-defined]
    for part, funcs in DELTA_PARTS.items():
        total = 0.0
        for (path, _line, name), (_cc, _nc, _tt, ct, _callers) in table.items():
            if any(path.endswith(suffix) and name == fn for suffix, fn in funcs):
                total += ct
        out[part] = total / turns * 1e3
    return out


def profile_delta_turns(args: argparse.Namespace, url: str, paddr: str, out: Path) -> int:
    """Where a DeltaChannel turn's time goes at turns 1-10 and at the last ten,
    through HTTPSaver and InMemorySaver in the same run; then the service's
    CPU profile over the turns that follow, for --seconds."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from saver_client import HTTPSaver

    questions, replies = wl.chat_prompts(args.turns + 1000)
    # Profiled: turns 11-20 (past the first turns' warm-up) and the last ten;
    # unprofiled, for the wall time: the ten turns before each.
    windows = {"first": range(10, 20), "last": range(args.turns - 10, args.turns)}
    plain = {"first": range(0, 10), "last": range(args.turns - 20, args.turns - 10)}
    report: dict[str, dict[str, Any]] = {}
    for name, saver in (("HTTPSaver", HTTPSaver(url)), ("InMemorySaver", InMemorySaver())):
        graph = wl.delta_chat_graph(saver, replies)
        cfg = {"configurable": {"thread_id": f"prof-turns-{name}-{int(time.time())}"}}
        profs = {w: cProfile.Profile() for w in windows}
        times: dict[str, list[float]] = {w: [] for w in windows}
        plain_times: dict[str, list[float]] = {w: [] for w in plain}
        # The saver's calls, timed: LangGraph runs puts in a thread pool,
        # where cProfile does not see them.
        calls: dict[str, dict[str, float]] = {w: {} for w in windows}
        current: list[str | None] = [None]

        def timed(method: str) -> None:
            orig = getattr(saver, method)

            def wrapper(*a: Any, **kw: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return orig(*a, **kw)
                finally:
                    if current[0] is not None:
                        c = calls[current[0]]
                        c[method] = c.get(method, 0.0) + time.perf_counter() - t0

            setattr(saver, method, wrapper)

        for method in ("put", "put_writes", "get_tuple", "get_delta_channel_history"):
            timed(method)

        def turn(t: int, pr: cProfile.Profile | None = None) -> float:
            t0 = time.perf_counter()
            if pr:
                pr.enable()
            graph.invoke({"messages": [HumanMessage(content=questions[t])]}, cfg, durability="sync")
            if pr:
                pr.disable()
            return time.perf_counter() - t0

        for t in range(args.turns):
            window = next((w for w, r in windows.items() if t in r), None)
            current[0] = window
            took = turn(t, profs[window] if window else None)
            current[0] = None
            if window:
                times[window].append(took)
            if (p := next((w for w, r in plain.items() if t in r), None)) is not None:
                plain_times[p].append(took)
        report[name] = {}
        for w in windows:
            stats = pstats.Stats(profs[w])
            report[name][w] = {"turn_ms": sum(times[w]) / len(times[w]) * 1e3, "parts": _parts(stats, len(times[w])),
                               "plain_ms": sum(plain_times[w]) / len(plain_times[w]) * 1e3,
                               "calls": {m: v / len(times[w]) * 1e3 for m, v in calls[w].items()}}
            s = io.StringIO()
            stats.stream = s  # type: ignore[attr-defined]
            stats.sort_stats("cumulative").print_stats(40)
            (out / f"client-delta-turns-{name}-{w}.txt").write_text(s.getvalue())
        if name == "HTTPSaver":
            # The service's CPU over the turns that follow, as many as fit.
            result: dict[str, bytes] = {}
            secs = args.seconds

            def fetch() -> None:
                with urllib.request.urlopen(f"http://{paddr}/debug/pprof/profile?seconds={secs}",
                                            timeout=secs + 30) as resp:
                    result["data"] = resp.read()

            th = threading.Thread(target=fetch, daemon=True)
            th.start()
            t, more = args.turns, []
            while th.is_alive():
                more.append(turn(t))
                t += 1
            prof_path = out / f"cpu-delta-turns-{args.store}.pprof"
            prof_path.write_bytes(result.get("data", b""))
            log(f"service profile over turns {args.turns + 1}-{t} ({sum(more) / len(more) * 1e3:.1f} ms each) "
                f"-> {prof_path}")
            for extra in ([], ["-cum"]):
                top = subprocess.run(["go", "tool", "pprof", "-top", *extra, "-nodecount=30", str(BIN / "profserve"),
                                      str(prof_path)], capture_output=True, text=True, cwd=ROOT)
                print(top.stdout[:6000])
        if hasattr(saver, "close"):
            saver.close()
    print(f"\nms per turn, turns 11-20 -> {args.turns - 9}-{args.turns} under the client's cProfile (parts overlap "
          f"where nested; client profiles in {out}); unprofiled, turns 1-10 -> {args.turns - 19}-{args.turns - 10}")
    for name, r in report.items():
        f, l = r["first"], r["last"]
        print(f"{name}: unprofiled {f['plain_ms']:.1f} -> {l['plain_ms']:.1f} ms ({l['plain_ms'] / f['plain_ms']:.2f}x); "
              f"profiled {f['turn_ms']:.1f} -> {l['turn_ms']:.1f} ms ({l['turn_ms'] / f['turn_ms']:.2f}x)")
        for part in DELTA_PARTS:
            a, b = f["parts"][part], l["parts"][part]
            if a or b:
                print(f"  {part:55s} {a:7.2f} -> {b:7.2f}")
        for method in sorted(set(f["calls"]) | set(l["calls"])):
            print(f"  saver.{method} (wall, any thread){'':30s} {f['calls'].get(method, 0):7.2f} -> "
                  f"{l['calls'].get(method, 0):7.2f}")
    return 0


def profile_store_op(args: argparse.Namespace, url: str, paddr: str, out: Path) -> int:
    """Fill a namespace through HTTPStore, then profile one op repeated."""
    from saver_client import HTTPStore

    vectors = st.Vectors(args.items, 1000)
    store = HTTPStore(url, index=vectors.index())
    ns = ("users", f"prof-{int(time.time())}", "memories")
    t0 = time.perf_counter()
    st.fill(store, ns, 0, args.items, 1)
    if args.store_op in ("search_filter_plain", "put_plain"):
        st.fill(store, st.plain(ns), 0, args.items, 1, index=False)
    log(f"filled {args.items:,} items in {time.perf_counter() - t0:.1f}s")
    result: dict[str, bytes] = {}
    secs = args.seconds

    def fetch() -> None:
        with urllib.request.urlopen(f"http://{paddr}/debug/pprof/profile?seconds={secs}", timeout=secs + 30) as resp:
            result["data"] = resp.read()

    # The op, repeated for as long as the profile runs.
    t = threading.Thread(target=fetch, daemon=True)
    t.start()
    pr = cProfile.Profile() if args.client else None
    if pr:
        pr.enable()
    samples: list[dict[str, float]] = []
    seed = 3
    while t.is_alive():
        samples.append(st.store_round({"ours": store}, {"ours": ns}, args.items, 50, 5, 1e9, seed,
                                      (args.store_op,))["ours"][args.store_op])
        seed += 1
    if pr:
        pr.disable()
    t.join()
    prof_path = out / f"cpu-store-{args.store}-{args.store_op}.pprof"
    prof_path.write_bytes(result.get("data", b""))
    log(f"{args.store_op}: p50 {wl.median([x['p50_ms'] for x in samples]):.3f} ms (median of {len(samples)} "
        f"runs) -> {prof_path}")
    for extra in ([], ["-cum"]):
        top = subprocess.run(["go", "tool", "pprof", "-top", *extra, "-nodecount=35", str(BIN / "profserve"),
                              str(prof_path)], capture_output=True, text=True, cwd=ROOT)
        print(top.stdout[:7000])
    if pr:
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
        print(s.getvalue()[:10000])
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
