"""The resumed agent's memory in tokens: for each scenario of
python/tests/support/memory.py (run on the real graph code with
deterministic fake models, against a `saver serve` on the embedded store),
the tokens of

  (i)   the flat history: every message and write of every checkpoint of the
        thread, in time order (list + get_tuple);
  (ii)  live_messages(thread);
  (iii) resume_context(thread, values=True).text,

counted with OpenAI's o200k_base BPE (bpe-openai; its data ships in the wheel,
so nothing is downloaded), and the reduction of (ii) and (iii) against (i),
next to the 55.1 % the MAGE paper reports. Also, against the same context:
the flat history respelled as compactly as the context (one line per
checkpoint, "loop" unsaid), so that the saving is seen not to come from
spelling, and the write log: the writes alone, each once, which is what an
append-only event log would hold.

    make bench-memory          # about 20 seconds
    bench/memory.py --encoding cl100k_base

Prints the table and writes it to bench/results/memory.md and memory.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from statistics import mean
from typing import Any

import bpe_openai

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python" / "tests"))

import harness  # noqa: E402
from support import memory as mem  # noqa: E402

from saver_client import HTTPSaver  # noqa: E402

ARTICLE = 55.1  # % fewer tokens, the MAGE paper's mean


def write_log(flat: mem.Flat) -> str:
    """The flat history's writes alone: what an event log holds."""
    return "".join(line + "\n" for line in flat.text.splitlines() if line.startswith(("step ", "  wrote ")))


def reduction(part: int, whole: int) -> float:
    return 100.0 * (1 - part / whole) if whole else 0.0


def measure(url: str, encoding: str) -> dict[str, Any]:
    enc = bpe_openai.get_encoding(encoding)
    count = lambda text: len(enc.encode(text))  # noqa: E731
    rows = []
    example = ""
    with HTTPSaver(url) as saver:
        for scenario in mem.SCENARIOS:
            thread = scenario(saver)
            t = mem.texts(saver, thread)
            flat, respelled, log, live, ctx = (count(t.flat.text), count(t.flat.respelled), count(write_log(t.flat)),
                                               count(mem.live_text(t.live)), count(t.context.text))
            rows.append({
                "scenario": thread.name,
                "checkpoints": len(saver.tree(thread.thread_id).nodes),
                "flat_history": flat,
                "respelled_flat": respelled,
                "write_log": log,
                "live_messages": live,
                "resume_context": ctx,
                # A thread without messages has no live messages to speak of.
                "live_messages_reduction": round(reduction(live, flat), 1) if t.flat.messages else None,
                "resume_context_reduction": round(reduction(ctx, flat), 1),
                "resume_context_vs_respelled_flat": round(reduction(ctx, respelled), 1),
                "resume_context_vs_write_log": round(reduction(ctx, log), 1),
            })
            if scenario is mem.fork_after_update:
                example = t.context.text
    return {
        "encoding": encoding,
        "tokenizer": f"bpe-openai {bpe_openai.__version__}",
        "rows": rows,
        "mean": {
            k: round(mean(r[k] for r in rows if r[k] is not None), 1)
            for k in (
                "live_messages_reduction",
                "resume_context_reduction",
                "resume_context_vs_respelled_flat",
                "resume_context_vs_write_log",
            )
        },
        "article": ARTICLE,
        "example_context": example,
    }


def table(res: dict[str, Any]) -> str:
    lines = [
        f"Tokens ({res['encoding']}, {res['tokenizer']}); reduction against the flat history.",
        "",
        "| scenario | checkpoints | flat history | respelled flat | write log | live_messages | resume_context | "
        "live_messages reduction | resume_context reduction | resume_context vs respelled flat | resume_context vs write log |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in res["rows"]:
        live = "n/a (no messages)" if r["live_messages_reduction"] is None else f"{r['live_messages_reduction']:.1f} %"
        lines.append(
            f"| {r['scenario']} | {r['checkpoints']} | {r['flat_history']} | {r['respelled_flat']} | {r['write_log']} | "
            f"{r['live_messages']} | {r['resume_context']} | {live} | {r['resume_context_reduction']:.1f} % | "
            f"{r['resume_context_vs_respelled_flat']:.1f} % | {r['resume_context_vs_write_log']:.1f} % |"
        )
    m = res["mean"]
    lines.append(
        f"| **mean** | | | | | | | {m['live_messages_reduction']:.1f} % | {m['resume_context_reduction']:.1f} % | "
        f"{m['resume_context_vs_respelled_flat']:.1f} % | {m['resume_context_vs_write_log']:.1f} % |"
    )
    lines.append(f"| the article (MAGE) | | | | | | | | {res['article']:.1f} % | | |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoding", default="o200k_base", choices=["o200k_base", "cl100k_base"])
    ap.add_argument("--url", help="a running service (default: start one on the embedded store)")
    args = ap.parse_args()
    stack = harness.Stack(run_id=uuid.uuid4().hex[:8])
    try:
        url = args.url or stack.start_service("bolt", name="saver-memory").url
        res = measure(url, args.encoding)
    finally:
        stack.close()
    out = table(res)
    print(out)
    print("The resume context of the fork scenario:\n")
    print(res["example_context"])
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "memory.md").write_text(out)
    (results / "memory.json").write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
