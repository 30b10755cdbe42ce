/**
 * Real LangGraph.js graphs through HTTPSaver, each compared with the same
 * graph on MemorySaver.
 *
 * Every scenario runs twice, once per saver, and returns a trace: run
 * outputs, state snapshots, the full state history (values, next, metadata
 * source and step, parent links, interrupts, task errors), how often each
 * node ran. The two traces must be equal; a few absolute checks make sure the
 * scenario did what it claims (two savers wrong in the same way would pass).
 */

import { randomUUID } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Command, MemorySaver } from "@langchain/langgraph";
import { inject } from "vitest";

import { HTTPSaver } from "../src/index.js";
import {
  callsOf,
  deltaGraph,
  fanoutGraph,
  fanoutSubgraphsGraph,
  flakyGraph,
  interruptGraph,
  sequentialGraph,
  subgraphGraph,
  type Calls,
} from "./graphs.js";
import { APIS, DURABILITIES, type Api, type Durability, historySig, norm, Runner, snapshotSig } from "./helpers.js";

type Trace = Record<string, unknown>;
type Scenario = (r: Runner) => Promise<Trace>;

const url = inject("saverUrl");

async function compare(scenario: Scenario, api: Api, durability: Durability): Promise<Trace> {
  const expected = await scenario(new Runner(new MemorySaver(), api, durability));
  const got = await scenario(new Runner(new HTTPSaver(url), api, durability));
  expect(got).toEqual(expected);
  return got;
}

const newConfig = (): RunnableConfig => ({ configurable: { thread_id: `graph-${randomUUID()}` } });
const threadOf = (c: RunnableConfig) => String(c.configurable!.thread_id);

// -- sequential ----------------------------------------------------------------

async function scenarioSequential(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = sequentialGraph(r.saver, calls);
  const config = newConfig();
  const out1 = await r.run(graph, { log: ["in"], n: 0 }, config);
  const out2 = await r.run(graph, { log: ["again"] }, config);
  return {
    outputs: [out1, out2],
    state: snapshotSig(await r.state(graph, config)),
    history: historySig(await r.history(graph, config)),
    calls: callsOf(calls),
    allNamespaces: await r.countCheckpoints(threadOf(config)),
  };
}

describe.each(DURABILITIES)("durability %s", (durability) => {
  it.each(APIS)("sequential graph, %s", async (api) => {
    const trace = await compare(scenarioSequential, api, durability);
    const state = trace.state as ReturnType<typeof snapshotSig>;
    expect(state.values).toEqual({ log: ["in", "a", "b", "c", "again", "a", "b", "c"], n: 6 });
    expect(state.next).toEqual([]);
    expect(trace.calls).toEqual({ a: 2, b: 2, c: 2 });
    // Two runs of input + 3 steps each (+ the first step) when every step is saved.
    expect((trace.history as unknown[]).length).toBe(durability === "exit" ? 2 : 10);
  });

  it.each(APIS)("interrupt() and Command({ resume }), %s", async (api) => {
    const trace = await compare(scenarioInterrupt, api, durability);
    const waiting = trace.waiting as ReturnType<typeof snapshotSig>;
    expect(waiting.next).toEqual(["ask"]);
    expect(waiting.interrupts).toEqual([{ question: "name?" }]);
    expect((trace.state as ReturnType<typeof snapshotSig>).values).toEqual({
      log: ["in", "before", "ask", "hello Ada"],
      name: "Ada",
    });
    // "before" finished before the interrupt: resuming must not run it again.
    expect(trace.calls).toEqual({ after: 1, ask: 2, before: 1 });
  });

  it.each(APIS)("a node that throws, then a retry, %s", async (api) => {
    const trace = await compare(scenarioRetry, api, durability);
    expect(trace.error).toEqual(["error", "Error", "flaky failed"]);
    const failed = trace.failed as ReturnType<typeof snapshotSig>;
    const tasks = Object.fromEntries(failed.tasks.map((t) => [t.name, t]));
    // The stored error comes back in the snapshot as a plain name and message.
    expect(tasks.flaky!.error).toEqual({ name: "Error", message: "flaky failed" });
    expect(failed.next).toEqual(["flaky"]);
    expect((failed.values as { log: string[] }).log).toEqual(["in", "ok"]);
    const values = (trace.state as ReturnType<typeof snapshotSig>).values as { log: string[] };
    expect(values.log).toEqual(["in", "ok", "flaky", "join"]);
    // The retry re-ran only the failed node.
    expect(trace.calls).toEqual({ flaky: 2, join: 1, ok: 1 });
  });
});

// -- interrupt and resume ----------------------------------------------------------

async function scenarioInterrupt(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = interruptGraph(r.saver, calls);
  const config = newConfig();
  const out1 = await r.run(graph, { log: ["in"] }, config);
  const waiting = snapshotSig(await r.state(graph, config));
  const out2 = await r.run(graph, new Command({ resume: "Ada" }), config);
  return {
    outputs: [out1, out2],
    waiting,
    state: snapshotSig(await r.state(graph, config)),
    history: historySig(await r.history(graph, config)),
    calls: callsOf(calls),
  };
}

// -- a failing node, then a successful retry on the same thread ---------------------

async function scenarioRetry(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = flakyGraph(r.saver, calls, { left: 1 });
  const config = newConfig();
  const error = await r.runError(graph, { log: ["in"] }, config);
  const failed = snapshotSig(await r.state(graph, config));
  const output = await r.run(graph, null, config);
  return {
    error,
    failed,
    output,
    state: snapshotSig(await r.state(graph, config)),
    history: historySig(await r.history(graph, config)),
    calls: callsOf(calls),
  };
}

// -- subgraph ---------------------------------------------------------------------

async function scenarioSubgraph(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = subgraphGraph(r.saver, calls);
  const config = newConfig();
  const out1 = await r.run(graph, { log: ["in"] }, config);
  const waiting = await r.state(graph, config, true);
  const subState = waiting.tasks[0]!.state as { config: RunnableConfig };
  const subConf = subState.config.configurable!;
  // The subgraph's whole chain: its namespace without a checkpoint id.
  const subHistory = historySig(
    await r.history(graph, { configurable: { thread_id: subConf.thread_id, checkpoint_ns: subConf.checkpoint_ns } }),
  );
  const out2 = await r.run(graph, new Command({ resume: "Ada" }), config);
  return {
    outputs: [out1, out2],
    waiting: snapshotSig(waiting),
    subHistory,
    state: snapshotSig(await r.state(graph, config, true)),
    history: historySig(await r.history(graph, config)),
    calls: callsOf(calls),
    allNamespaces: await r.countCheckpoints(threadOf(config)),
  };
}

it.each(APIS)("subgraph, nested, interrupted inside, %s", async (api) => {
  const trace = await compare(scenarioSubgraph, api, "async");
  const waiting = trace.waiting as ReturnType<typeof snapshotSig>;
  expect(waiting.next).toEqual(["sub"]);
  const sub = waiting.tasks[0]!.state!;
  expect(sub.ns).toEqual(["sub"]);
  expect(sub.next).toEqual(["s2"]);
  expect(sub.interrupts).toEqual(["sub: name?"]);
  expect(sub.values).toEqual({ sublog: ["s1"], deeplog: ["deep"] });
  const subHistory = trace.subHistory as ReturnType<typeof snapshotSig>[];
  expect(subHistory.map((h) => h.step)).toEqual([2, 1, 0, -1]);
  expect((trace.state as ReturnType<typeof snapshotSig>).values).toEqual({
    log: ["in", "p1", "p2 Ada"],
    sublog: ["s1", "s2"],
    name: "Ada",
  });
  expect(trace.calls).toEqual({ deep: 1, p1: 1, p2: 1, s1: 1, s2: 2 });
  // The subgraphs' own checkpoints live in other namespaces of the thread.
  expect(trace.allNamespaces as number).toBeGreaterThanOrEqual(
    (trace.history as unknown[]).length + subHistory.length + 3,
  );
});

// -- time travel and updateState ------------------------------------------------------

async function scenarioTimeTravel(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = sequentialGraph(r.saver, calls);
  const config = newConfig();
  await r.run(graph, { log: ["in"], n: 0 }, config);
  const first = await r.history(graph, config);
  const beforeB = first.find((s) => s.next.length === 1 && s.next[0] === "b")!;
  const beforeC = first.find((s) => s.next.length === 1 && s.next[0] === "c")!;

  // Replay from before "b": a fork whose new steps chain from that checkpoint.
  const replay = await r.run(graph, null, beforeB.config);
  const afterReplay = snapshotSig(await r.state(graph, config));

  // Edit an old checkpoint of the first branch, then continue from the edit.
  const edited = await r.update(graph, beforeC.config, { log: ["edited"] }, "b");
  const editedState = snapshotSig(await r.state(graph, edited));
  const resumed = await r.run(graph, null, edited);

  // A sibling copy of an old checkpoint: a put that writes no new blobs, so
  // its values must resolve from the original's.
  const copied = await r.update(graph, beforeC.config, undefined, "__copy__");
  const copiedState = snapshotSig(await r.state(graph, copied));

  return {
    replay,
    afterReplay,
    editedState,
    resumed,
    copiedState,
    state: snapshotSig(await r.state(graph, config)),
    history: historySig(await r.history(graph, config)),
    calls: callsOf(calls),
  };
}

it.each(APIS)("updateState and time travel from an old checkpoint, %s", async (api) => {
  const trace = await compare(scenarioTimeTravel, api, "async");
  const sig = (k: string) => trace[k] as ReturnType<typeof snapshotSig>;
  expect((sig("afterReplay").values as { log: string[] }).log).toEqual(["in", "a", "b", "c"]);
  expect((sig("editedState").values as { log: string[] }).log).toEqual(["in", "a", "b", "edited"]);
  expect(sig("editedState").source).toBe("update");
  expect(sig("copiedState").values).toEqual({ log: ["in", "a", "b"], n: 2 });
  expect(sig("copiedState").next).toEqual(["c"]);
  expect(sig("copiedState").source).toBe("fork");
  expect(sig("state").values).toEqual(sig("copiedState").values); // the copy is newest
  expect(trace.calls).toEqual({ a: 1, b: 2, c: 3 });
  const sources = (trace.history as ReturnType<typeof snapshotSig>[]).map((h) => h.source);
  expect(sources).toContain("update");
  expect(sources).toContain("fork");
});

// -- Send fan-out ---------------------------------------------------------------------

async function scenarioFanout(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = fanoutGraph(r.saver, calls);
  const config = newConfig();
  const output = await r.run(graph, { items: [0, 1, 2, 3, 4, 5, 6, 7] }, config);
  return {
    output,
    state: snapshotSig(await r.state(graph, config)),
    history: historySig(await r.history(graph, config)),
    calls: callsOf(calls),
  };
}

it.each(APIS)("Send fan-out, %s", async (api) => {
  const trace = await compare(scenarioFanout, api, "async");
  const values = (trace.state as ReturnType<typeof snapshotSig>).values as { results: number[]; total: number };
  const squares = [0, 1, 2, 3, 4, 5, 6, 7].map((x) => x * x);
  expect([...values.results].sort((a, b) => a - b)).toEqual(squares);
  expect(values.total).toBe(squares.reduce((a, b) => a + b, 0));
  expect(trace.calls).toEqual({ plan: 1, reduce: 1, work: 8 });
});

async function scenarioFanoutSubgraphs(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = fanoutSubgraphsGraph(r.saver, calls);
  const config = newConfig();
  const output = await r.run(graph, { items: [0, 1, 2, 3, 4, 5] }, config);
  return {
    output,
    history: historySig(await r.history(graph, config)),
    calls: callsOf(calls),
    allNamespaces: await r.countCheckpoints(threadOf(config)),
  };
}

it("Send to parallel subgraphs, each in its own namespace", async () => {
  const trace = await compare(scenarioFanoutSubgraphs, "invoke", "async");
  const history = trace.history as ReturnType<typeof snapshotSig>[];
  expect([...(history[0]!.values as { results: number[] }).results].sort((a, b) => a - b)).toEqual([0, 1, 4, 9, 16, 25]);
  expect(trace.calls).toEqual({ square: 6 });
  // Every subgraph run kept its own chain (input, start, square) in its namespace.
  expect(trace.allNamespaces).toBe(history.length + 6 * 3);
});

// -- stream modes ------------------------------------------------------------------------

const MODES = ["values", "updates", "checkpoints", "tasks"];

async function scenarioStreamModes(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = interruptGraph(r.saver, calls);
  const config = newConfig();
  const first = await r.streamModes(graph, { log: ["in"] }, config, MODES);
  const resumed = await r.streamModes(graph, new Command({ resume: "Ada" }), config, MODES);
  return { first, resumed, history: historySig(await r.history(graph, config)), calls: callsOf(calls) };
}

it.each(DURABILITIES)("stream modes values, updates, checkpoints, tasks together, durability %s", async (durability) => {
  const trace = await compare(scenarioStreamModes, "stream", durability);
  const modes = (chunks: unknown) => new Set((chunks as [string, unknown][]).map(([mode]) => mode));
  expect(modes(trace.first)).toEqual(new Set(MODES));
  expect(modes(trace.resumed)).toEqual(new Set(MODES));
  const updates = (trace.resumed as [string, unknown][]).filter(([m]) => m === "updates").map(([, u]) => u);
  expect(updates).toContainEqual({ after: { log: ["hello Ada"] } });
});

it("norm hides ids only: different values stay different", () => {
  expect(norm({ a: [1, [2, 3]] })).not.toEqual(norm({ a: [1, [2, 4]] }));
  expect(norm("thread 1f1ed75d-ee80-6460-8003-5946f6c2fabe")).toBe("thread <id>");
});

// -- DeltaChannel ----------------------------------------------------------------------

async function scenarioDelta(r: Runner): Promise<Trace> {
  const calls: Calls = new Map();
  const graph = deltaGraph(r.saver, calls, 7);
  const config = newConfig();
  const output = await r.run(graph, { history: "hello" }, config);
  const state = snapshotSig(await r.state(graph, config));
  const history = await r.history(graph, config);
  // Fork from an old checkpoint: its value must be rebuilt from its own
  // ancestors, not from the newer branch.
  const old = history.find((s) => (s.values as { turns: number }).turns === 2)!;
  const forked = await r.update(graph, old.config, { history: "edited" }, "speak");
  const forkedState = snapshotSig(await r.state(graph, forked));
  return {
    output,
    state,
    history: historySig(history),
    forkedState,
    // The fork is the thread's newest checkpoint now.
    latest: snapshotSig(await r.state(graph, config)),
    calls: callsOf(calls),
  };
}

it("DeltaChannel values rebuilt through getDeltaChannelHistory, forks included", async () => {
  const trace = await compare(scenarioDelta, "invoke", "async");
  const state = trace.state as ReturnType<typeof snapshotSig>;
  expect(state.values).toEqual({
    history: ["hello", ...[1, 2, 3, 4, 5, 6, 7].map((i) => `turn ${i}`)],
    turns: 7,
  });
  expect((trace.forkedState as ReturnType<typeof snapshotSig>).values).toEqual({
    history: ["hello", "turn 1", "turn 2", "edited"],
    turns: 2,
  });
  expect(trace.latest).toEqual(trace.forkedState);
  expect(trace.calls).toEqual({ speak: 7 });
});

it("asks the service for a DeltaChannel's history in one request", async () => {
  const lines: string[] = [];
  const saver = new HTTPSaver(url, { logger: { warn: (m) => lines.push(m), debug: (m) => lines.push(m) } });
  const graph = deltaGraph(saver, new Map(), 7);
  const config = newConfig();
  await graph.invoke({ history: "hello" }, config);
  lines.length = 0;
  const state = await graph.getState(config);
  expect((state.values as { history: string[] }).history).toHaveLength(8);
  const requests = lines.filter((l) => / -> \d+ /.test(l));
  expect(requests.filter((l) => l.includes("/delta-history -> 200"))).toHaveLength(1);
  // The latest checkpoint and the history: nothing walks the chain one checkpoint at a time.
  expect(requests.filter((l) => l.startsWith("GET "))).toHaveLength(1);
});
