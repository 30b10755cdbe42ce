/**
 * Running graphs the same way on two savers and comparing what they remember.
 *
 * Checkpoint ids, task ids and interrupt ids differ between two runs by
 * design (time-based or derived from checkpoint ids), so snapshots are
 * compared through a signature that keeps everything else and expresses
 * links between checkpoints structurally: a parent is named by its position
 * in the history.
 */

import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { Command, isCommand, Send, type StateSnapshot } from "@langchain/langgraph";

export type Api = "invoke" | "stream";
export type Durability = "sync" | "async" | "exit";
export const APIS: Api[] = ["invoke", "stream"];
export const DURABILITIES: Durability[] = ["sync", "async", "exit"];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Graph = any;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g;

/** A comparable form of outputs, stream chunks and state values: ids and times removed. */
export function norm(x: unknown): unknown {
  if (typeof x === "string") return x.replace(UUID, "<id>").replace(ISO_TIME, "<time>");
  if (x instanceof Error) return ["error", x.name, x.message];
  if (x instanceof Send) return ["send", x.node, norm(x.args)];
  if (isCommand(x)) return ["command", norm((x as Command).update), norm((x as Command).resume), norm((x as Command).goto)];
  if (Array.isArray(x)) return x.map(norm);
  if (x && typeof x === "object") {
    const o = x as Record<string, unknown>;
    // An Interrupt: its id is derived from the checkpoint.
    if ("value" in o && "id" in o && Object.keys(o).length <= 3) return ["interrupt", norm(o.value)];
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      if (k === "id" || k === "checkpoint_id" || k === "thread_ts" || k === "ts" || k === "timestamp" || k === "createdAt") {
        out[k] = v === undefined ? undefined : "<id>";
      } else out[k] = norm(v);
    }
    return out;
  }
  return x;
}

/** A namespace without its task ids: "sub:1f2e|inner:9a" -> ["sub", "inner"]. */
export function nsShape(config: RunnableConfig): string[] {
  const ns = String(config.configurable?.checkpoint_ns ?? "");
  return ns ? ns.split("|").map((part) => part.split(":")[0]!) : [];
}

export interface Sig {
  values: unknown;
  next: string[];
  ns: string[];
  source: unknown;
  step: unknown;
  parentNamespaces: string[];
  parent: number | string | null;
  hasCreatedAt: boolean;
  interrupts: unknown[];
  tasks: { name: string; error: unknown; interrupts: unknown[]; result: unknown; state: Sig | null }[];
}

function isSnapshot(x: unknown): x is StateSnapshot {
  return !!x && typeof x === "object" && "values" in x && "next" in x && "tasks" in x;
}

export function snapshotSig(s: StateSnapshot, positions: Map<string, number> = new Map()): Sig {
  const parentId = s.parentConfig?.configurable?.checkpoint_id as string | undefined;
  const metadata = (s.metadata ?? {}) as Record<string, unknown>;
  return {
    values: norm(s.values),
    next: [...s.next],
    ns: nsShape(s.config),
    source: metadata.source,
    step: metadata.step,
    parentNamespaces: Object.keys((metadata.parents as Record<string, string>) ?? {}).sort(),
    // Within one history, the parent is named by its position; a parent
    // outside the listed history (another namespace) only by its existence.
    parent: parentId === undefined ? null : (positions.get(parentId) ?? "not in this history"),
    hasCreatedAt: Boolean(s.createdAt),
    interrupts: s.tasks.flatMap((t) => t.interrupts.map((i) => norm(i.value))),
    tasks: s.tasks.map((t) => ({
      name: t.name,
      error: norm(t.error),
      interrupts: t.interrupts.map((i) => norm(i.value)),
      result: norm(t.result),
      state: isSnapshot(t.state) ? snapshotSig(t.state) : null,
    })),
  };
}

export function historySig(history: StateSnapshot[]): Sig[] {
  const positions = new Map(history.map((s, i) => [s.config.configurable!.checkpoint_id as string, i]));
  return history.map((s) => snapshotSig(s, positions));
}

/** Drives a graph through one API with one durability. */
export class Runner {
  constructor(
    readonly saver: BaseCheckpointSaver,
    readonly api: Api,
    readonly durability: Durability,
  ) {}

  /** Run the graph; its output, or the streamed values, in comparable form. */
  async run(graph: Graph, input: unknown, config: RunnableConfig): Promise<unknown> {
    const opts = { ...config, durability: this.durability };
    if (this.api === "invoke") return norm(await graph.invoke(input, opts));
    // Mode "values": "updates" arrive in task completion order, which differs
    // between any two runs with parallel tasks.
    const chunks: unknown[] = [];
    for await (const chunk of await graph.stream(input, { ...opts, streamMode: "values" })) chunks.push(chunk);
    return norm(chunks);
  }

  /** Stream in several modes at once; the (mode, chunk) pairs in comparable form. */
  async streamModes(graph: Graph, input: unknown, config: RunnableConfig, modes: string[]): Promise<unknown> {
    const chunks: unknown[] = [];
    const opts = { ...config, durability: this.durability, streamMode: modes };
    for await (const chunk of await graph.stream(input, opts)) chunks.push(chunk);
    return norm(chunks);
  }

  /** Run a graph that is expected to throw; the error in comparable form. */
  async runError(graph: Graph, input: unknown, config: RunnableConfig): Promise<unknown> {
    let out: unknown;
    try {
      out = await this.run(graph, input, config);
    } catch (err) {
      return norm(err);
    }
    throw new Error(`expected the run to fail, it returned ${JSON.stringify(out)}`);
  }

  state(graph: Graph, config: RunnableConfig, subgraphs = false): Promise<StateSnapshot> {
    return graph.getState(config, { subgraphs });
  }

  async history(graph: Graph, config: RunnableConfig): Promise<StateSnapshot[]> {
    const out: StateSnapshot[] = [];
    for await (const s of graph.getStateHistory(config)) out.push(s);
    return out;
  }

  update(graph: Graph, config: RunnableConfig, values: unknown, asNode?: string): Promise<RunnableConfig> {
    return graph.updateState(config, values, asNode);
  }

  /** Checkpoints of the thread in every namespace (no checkpoint_ns given). */
  async countCheckpoints(threadId: string): Promise<number> {
    let n = 0;
    for await (const _ of this.saver.list({ configurable: { thread_id: threadId } })) n++;
    return n;
  }
}
