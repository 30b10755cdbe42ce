/**
 * One service for TypeScript and Python agents: a thread a JS agent wrote
 * shows in `saver inspect` and on the /ui page like any other (metadata is
 * structured, values opaque), and this is what the two clients share:
 * metadata, the tree and the ledger's keys always; checkpoint values only
 * JS → Python (Python's serializer reads JSON, JS's cannot read msgpack).
 */

import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { inject } from "vitest";

import { deriveKey, HTTPSaver } from "../src/index.js";
import { main } from "../examples/payment_workflow.js";
import { REPO, saverBinary, STORE } from "./service.js";

const run = promisify(execFile);
const url = inject("saverUrl");
const saver = new HTTPSaver(url);

let thread = "";
beforeAll(async () => {
  thread = (await main(url, () => {})).threadId;
});

async function inspect(...args: string[]): Promise<unknown> {
  const { stdout } = await run(saverBinary(), ["inspect", "-url", url, "-json", ...args], { timeout: 30_000 });
  return JSON.parse(stdout);
}

it("shows a JS agent's thread in saver inspect", async () => {
  const threads = (await inspect("-limit", "1000", "threads")) as { thread_id: string; step: number; source: string }[];
  expect(threads.find((t) => t.thread_id === thread)).toMatchObject({ step: 7, source: "loop" });

  const cp = (await inspect("checkpoint", thread)) as {
    metadata: Record<string, unknown>;
    channels: { channel: string; type: string; bytes: number }[];
  };
  expect(cp.metadata).toEqual({ source: "loop", step: 7, parents: {} });
  expect(cp.channels.map((c) => c.channel).sort()).toEqual(["amount", "log", "orderId", "receipt", "tracking"]);
  expect(cp.channels.every((c) => c.type === "json" && c.bytes > 0)).toBe(true);

  const tree = await saver.tree(thread);
  const { stdout } = await run(saverBinary(), ["inspect", "-url", url, "tree", thread], { timeout: 30_000 });
  expect(stdout).toContain("error, retried");
  for (const n of tree.nodes) expect(stdout).toContain(n.checkpointId);
});

it("shows a JS agent's thread on the /ui page, in a real browser", async () => {
  const tree = await saver.tree(thread);
  const { stdout } = await run(
    process.execPath,
    [join(REPO, "ui-test", "tree.js"), "--url", url, "--thread", thread, "--nodes", String(tree.nodes.length), "--no-screenshot"],
    { timeout: 120_000 },
  );
  const shown = JSON.parse(stdout.trim().split("\n").at(-1)!) as { nodes: number; live: number; selected: string };
  expect(shown.nodes).toBe(tree.nodes.length);
  expect(shown.live).toBe(tree.livePath.length);
  expect(shown.selected).toBe(tree.head!.checkpointId);
});

// Python's HTTPSaver on the same service: reads the JS thread, writes one of
// its own, and holds a ledger key.
const PYTHON_SIDE = `
import json, sys, uuid
from langgraph.graph import StateGraph, START, END
from typing_extensions import TypedDict
from saver_client import HTTPSaver

url, js_thread, key = sys.argv[1:4]
out = {}
with HTTPSaver(url) as saver:
    t = saver.get_tuple({"configurable": {"thread_id": js_thread}})
    out["js_metadata"] = t.metadata
    out["js_log"] = t.checkpoint["channel_values"]["log"]

    class S(TypedDict):
        n: int
    b = StateGraph(S)
    b.add_node("inc", lambda s: {"n": s["n"] + 1})
    b.add_edge(START, "inc")
    b.add_edge("inc", END)
    thread = f"py-{uuid.uuid4()}"
    b.compile(checkpointer=saver).invoke({"n": 1}, {"configurable": {"thread_id": thread}})
    out["py_thread"] = thread
    out["claim"] = saver.claim(key, lease=60).state

from saver_client import derive_key
task = {"configurable": {"thread_id": "t-1", "checkpoint_ns": "pay:7e1f", "__pregel_task_id": "7e1f",
                         "checkpoint_map": {"": "1f0-cp"}}}
out["derived"] = [derive_key("charge", 1, config=task), derive_key("charge " + "é" * 300, 2, config=task)]
print(json.dumps(out))
`;

it("shares metadata, tree and ledger with Python; values only from JS to Python", async () => {
  const python = process.env.SAVER_PYTHON || join(REPO, ".venv", "bin", "python");
  const key = `shared-${thread}`;
  const { stdout } = await run(python, ["-c", PYTHON_SIDE, url, thread, key], { timeout: 60_000 });
  const py = JSON.parse(stdout) as {
    js_metadata: unknown;
    js_log: string[];
    py_thread: string;
    claim: string;
    derived: string[];
  };

  // Python reads the JS thread: metadata as is, values through its JSON reader.
  expect(py.js_metadata).toEqual({ source: "loop", step: 7, parents: {} });
  expect(py.js_log.at(-1)).toBe("archived");

  // JS reads the Python thread's tree and metadata, not its values (msgpack).
  const tree = await saver.tree(py.py_thread);
  expect(tree.livePath.map((n) => [n.step, n.source])).toEqual([[-1, "input"], [0, "loop"], [1, "loop"]]);
  await expect(saver.getTuple({ configurable: { thread_id: py.py_thread } })).rejects.toThrow(
    /Unknown serialization type: msgpack/,
  );

  // A key derived from a task's config is the same in both languages.
  const task = {
    configurable: { thread_id: "t-1", checkpoint_ns: "pay:7e1f", __pregel_task_id: "7e1f", checkpoint_map: { "": "1f0-cp" } },
  };
  expect([deriveKey("charge", 1, task), deriveKey(`charge ${"é".repeat(300)}`, 2, task)]).toEqual(py.derived);

  // The ledger is one: the key Python holds is in progress for JS.
  expect(py.claim).toBe("claimed");
  expect((await saver.claim(key)).state).toBe("in_progress");
});

it("runs on the store the environment names", async () => {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const dynamo = metrics.split("\n").filter((l) => l.startsWith("saver_dynamodb_requests_total{"));
  if (STORE === "dynamodb") {
    expect(dynamo.some((l) => /operation="(PutItem|TransactWriteItems)"\} [1-9]/.test(l))).toBe(true);
  } else {
    expect(STORE).toBe("embedded");
    expect(dynamo).toEqual([]);
  }
});
