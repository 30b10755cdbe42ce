"""Profile the service and the client on the benchmark's chat loop (b).

    .cache/bench-venv/bin/python bench/profiling.py [--store bolt|dynamodb] [--turns 50]
        [--client]
    .cache/bench-venv/bin/python bench/profiling.py --store-op search_query [--items 10000]
        [--store bolt|dynamodb] [--client]
    .cache/bench-venv/bin/python bench/profiling.py --delta-history [--turns 150]
        [--store bolt|dynamodb] [--client]

Starts the local AWS stack (bench/aws.sh) when the store is dynamodb, runs
bench/profserve (the service with pprof), runs the 50-turn chat loop through
HTTPSaver while taking a CPU profile of the service, and prints the profile's
top functions (`go tool pprof -top`), the per-turn time and, with --client, the
client's cProfile. With --store-op, the same for one op of the Store
benchmark (bench/store.py: get, put, search_filter or search_query) on a
namespace of --items items, filled before the profile starts. With
--delta-history, the same for get_state_history of a DeltaChannel chat of
--turns turns (benchmark (d)), the chat run before the profile starts. Profiles are
kept in .cache/bench/prof/.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import store as st  # noqa: E402
import workloads as wl  # noqa: E402
from harness import BIN, CACHE, ROOT, log, poll, spawn  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="bolt", choices=["bolt", "dynamodb"])
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--loops", type=int, default=3, help="chat loops (threads) to run")
    ap.add_argument("--client", action="store_true", help="also cProfile the client")
    ap.add_argument("--store-op", choices=st.OPS, help="profile this Store op instead of the chat loop")
    ap.add_argument("--items", type=int, default=10_000, help="items in the Store op's namespace")
    ap.add_argument("--seconds", type=int, default=15, help="the Store op's profile window")
    ap.add_argument("--delta-history", action="store_true",
                    help="profile get_state_history of a DeltaChannel chat of --turns turns")
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
        if args.store == "bolt":
            db = out / "prof.db"
            harness.remove_store(db)
            argv += ["-db", str(db)]
        else:
            stack.start_aws()
            ddb, s3 = stack.endpoints(False)
            env = {"AWS_ENDPOINT_URL_DYNAMODB": ddb, "AWS_ENDPOINT_URL_S3": s3}
            argv += ["-table", f"prof-{stack.run_id}"]
        proc = spawn("profserve", argv, env)
        stack._stack.callback(proc.stop)
        poll("profserve", lambda: addr.exists() and paddr.exists(), proc.alive)
        url = "http://" + addr.read_text().strip()
        if args.store_op:
            return profile_store_op(args, url, paddr.read_text().strip(), out)
        if args.delta_history:
            return profile_delta_history(args, url, paddr.read_text().strip(), out)
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


def profile_store_op(args: argparse.Namespace, url: str, paddr: str, out: Path) -> int:
    """Fill a namespace through HTTPStore, then profile one op repeated."""
    from saver_client import HTTPStore

    vectors = st.Vectors(args.items, 1000)
    store = HTTPStore(url, index=vectors.index())
    ns = ("users", f"prof-{int(time.time())}", "memories")
    t0 = time.perf_counter()
    st.fill(store, ns, 0, args.items, 1)
    if args.store_op == "search_filter_plain":
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
