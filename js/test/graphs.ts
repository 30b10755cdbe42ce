/** Graphs the tests run on both savers; each counts how often its nodes ran. */

import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { Annotation, DeltaValue, END, interrupt, Send, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { z } from "zod";

export type Calls = Map<string, number>;

export function count(calls: Calls, name: string): void {
  calls.set(name, (calls.get(name) ?? 0) + 1);
}

export const callsOf = (calls: Calls) => Object.fromEntries([...calls.entries()].sort());

const concat = <T>(a: T[], b: T[]) => a.concat(b);

export const Log = Annotation.Root({
  log: Annotation<string[]>({ reducer: concat, default: () => [] }),
  n: Annotation<number>(),
});

export function sequentialGraph(saver: BaseCheckpointSaver, calls: Calls) {
  const step = (name: string) => (state: typeof Log.State) => {
    count(calls, name);
    return { log: [name], n: (state.n ?? 0) + 1 };
  };
  return new StateGraph(Log)
    .addNode("a", step("a"))
    .addNode("b", step("b"))
    .addNode("c", step("c"))
    .addEdge(START, "a")
    .addEdge("a", "b")
    .addEdge("b", "c")
    .addEdge("c", END)
    .compile({ checkpointer: saver });
}

export const Ask = Annotation.Root({
  log: Annotation<string[]>({ reducer: concat, default: () => [] }),
  name: Annotation<string>(),
});

export function interruptGraph(saver: BaseCheckpointSaver, calls: Calls) {
  return new StateGraph(Ask)
    .addNode("before", () => {
      count(calls, "before");
      return { log: ["before"] };
    })
    .addNode("ask", () => {
      count(calls, "ask");
      const name = interrupt({ question: "name?" }) as string;
      return { log: ["ask"], name };
    })
    .addNode("after", (state: typeof Ask.State) => {
      count(calls, "after");
      return { log: [`hello ${state.name}`] };
    })
    .addEdge(START, "before")
    .addEdge("before", "ask")
    .addEdge("ask", "after")
    .addEdge("after", END)
    .compile({ checkpointer: saver });
}

const Deep = Annotation.Root({
  deeplog: Annotation<string[]>({ reducer: concat, default: () => [] }),
});
const Sub = Annotation.Root({
  deeplog: Annotation<string[]>({ reducer: concat, default: () => [] }),
  sublog: Annotation<string[]>({ reducer: concat, default: () => [] }),
  name: Annotation<string>(),
});
const Outer = Annotation.Root({
  log: Annotation<string[]>({ reducer: concat, default: () => [] }),
  sublog: Annotation<string[]>({ reducer: concat, default: () => [] }),
  name: Annotation<string>(),
});

export function subgraphGraph(saver: BaseCheckpointSaver, calls: Calls) {
  // A subgraph inside the subgraph: its namespace nests ("sub:<id>|inner:<id>").
  const inner = new StateGraph(Deep)
    .addNode("deep", () => {
      count(calls, "deep");
      return { deeplog: ["deep"] };
    })
    .addEdge(START, "deep")
    .addEdge("deep", END)
    .compile();
  // Each level has its own log key: a subgraph returns its whole state, which
  // the parent's reducer would otherwise add to what the parent already had.
  const sub = new StateGraph(Sub)
    .addNode("s1", () => {
      count(calls, "s1");
      return { sublog: ["s1"] };
    })
    .addNode("inner", inner)
    .addNode("s2", () => {
      count(calls, "s2");
      return { sublog: ["s2"], name: interrupt("sub: name?") as string };
    })
    .addEdge(START, "s1")
    .addEdge("s1", "inner")
    .addEdge("inner", "s2")
    .addEdge("s2", END)
    .compile();
  return new StateGraph(Outer)
    .addNode("p1", () => {
      count(calls, "p1");
      return { log: ["p1"] };
    })
    .addNode("sub", sub)
    .addNode("p2", (state: typeof Outer.State) => {
      count(calls, "p2");
      return { log: [`p2 ${state.name}`] };
    })
    .addEdge(START, "p1")
    .addEdge("p1", "sub")
    .addEdge("sub", "p2")
    .addEdge("p2", END)
    .compile({ checkpointer: saver });
}

export const Fan = Annotation.Root({
  items: Annotation<number[]>(),
  results: Annotation<number[]>({ reducer: concat, default: () => [] }),
  total: Annotation<number>(),
});

export function fanoutGraph(saver: BaseCheckpointSaver, calls: Calls) {
  return new StateGraph(Fan)
    .addNode("plan", () => {
      count(calls, "plan");
      return {};
    })
    .addNode("work", (state: typeof Fan.State) => {
      count(calls, "work");
      const x = state.items[0]!;
      return { results: [x * x] };
    })
    .addNode("reduce", (state: typeof Fan.State) => {
      count(calls, "reduce");
      return { total: state.results.reduce((a, b) => a + b, 0) };
    })
    .addEdge(START, "plan")
    .addConditionalEdges("plan", (state: typeof Fan.State) => state.items.map((x) => new Send("work", { items: [x] })), ["work"])
    .addEdge("work", "reduce")
    .addEdge("reduce", END)
    .compile({ checkpointer: saver });
}

const FanResult = Annotation.Root({
  results: Annotation<number[]>({ reducer: concat, default: () => [] }),
});

export function fanoutSubgraphsGraph(saver: BaseCheckpointSaver, calls: Calls) {
  // Each Send runs this subgraph in its own namespace, concurrently.
  const worker = new StateGraph({ input: Fan, output: FanResult })
    .addNode("square", (state: typeof Fan.State) => {
      count(calls, "square");
      return { results: [state.items[0]! ** 2] };
    })
    .addEdge(START, "square")
    .addEdge("square", END)
    .compile();
  return new StateGraph(Fan)
    .addNode("work", worker)
    .addConditionalEdges(START, (state: typeof Fan.State) => state.items.map((x) => new Send("work", { items: [x] })), ["work"])
    .addEdge("work", END)
    .compile({ checkpointer: saver });
}

/**
 * ok, then flaky, then join; flaky throws while `failures` lasts. (Run side
 * by side, LangGraph.js aborts a sibling of a failing task and records an
 * AbortError for it even when it had finished, on any saver; in sequence,
 * the failed step is the only one to run again.)
 */
export function flakyGraph(saver: BaseCheckpointSaver, calls: Calls, failures: { left: number }) {
  return new StateGraph(Log)
    .addNode("ok", () => {
      count(calls, "ok");
      return { log: ["ok"] };
    })
    .addNode("flaky", () => {
      count(calls, "flaky");
      if (failures.left > 0) {
        failures.left -= 1;
        throw new Error("flaky failed");
      }
      return { log: ["flaky"] };
    })
    .addNode("join", () => {
      count(calls, "join");
      return { log: ["join"] };
    })
    .addEdge(START, "ok")
    .addEdge("ok", "flaky")
    .addEdge("flaky", "join")
    .addEdge("join", END)
    .compile({ checkpointer: saver });
}

// `history` is a DeltaChannel: checkpoints store only each step's writes,
// and a full snapshot every third update; reading a checkpoint rebuilds the
// value from its ancestors' writes (getDeltaChannelHistory).
const Chat = new StateSchema({
  history: new DeltaValue(z.array(z.string()).default(() => []), {
    inputSchema: z.string(),
    reducer: (current: string[], writes: string[]) => [...current, ...writes],
    snapshotFrequency: 3,
  }),
  turns: z.number().default(0),
});

/** A loop of `turns` steps, each appending one line to the DeltaChannel. */
export function deltaGraph(saver: BaseCheckpointSaver, calls: Calls, turns: number) {
  return new StateGraph(Chat)
    .addNode("speak", (state: { turns: number }) => {
      count(calls, "speak");
      return { history: `turn ${state.turns + 1}`, turns: state.turns + 1 };
    })
    .addEdge(START, "speak")
    .addConditionalEdges("speak", (state: { turns: number }) => (state.turns < turns ? "speak" : END))
    .compile({ checkpointer: saver });
}
