/**
 * Typed answers of the service's tree queries: a thread's checkpoints as a tree.
 *
 * Every checkpoint is a node whose parent is the checkpoint it followed; forks
 * (time travel, `updateState`) are siblings, and a subgraph's first checkpoint
 * hangs under the parent-graph checkpoint that ran it. The *live path* runs
 * from the root to the *head*, the checkpoint LangGraph resumes from.
 *
 * A node's `status` says what became of the step run after it:
 * - `ok`: no error or interrupt was recorded;
 * - `error`: the next step failed and was not run again from here;
 * - `retried`: the next step failed, then the thread went on from here anyway;
 * - `interrupted`: paused by `interrupt()`, waiting for a resume;
 * - `resumed`: paused, then resumed from here.
 */

import { BadResponseError } from "./errors.js";
import { isRecord } from "./transport.js";

export type NodeStatus = "ok" | "error" | "retried" | "interrupted" | "resumed";

/** One checkpoint of a thread's tree, in the compact form the service sends. */
export interface TreeNode {
  checkpointId: string;
  /** "" for the root graph. */
  checkpointNs: string;
  /** The resolved parent (for a subgraph's first checkpoint, the parent-graph
   * checkpoint that ran it, in `parentNs`); undefined for a root. */
  parentId: string | undefined;
  parentNs: string;
  /** LangGraph's metadata source: "input", "loop", "update", "fork"; "" if none. */
  source: string;
  step: number;
  status: NodeStatus;
  /** Pending writes on this checkpoint hold an error: a failed attempt at the next step. */
  hasError: boolean;
  hasInterrupt: boolean;
  onLivePath: boolean;
  /** A root that should have had a parent (pruned, or a broken link). */
  orphan: boolean;
}

/** An abandoned branch of the root graph: work LangGraph will no longer resume. */
export interface Branch {
  /** The branch's checkpoints, from the first one off `fromId` down to its leaf. */
  checkpointIds: string[];
  /** The nearest ancestor on the live path, where the thread left this work behind. */
  forkPoint: string | undefined;
  /** The checkpoint the branch hangs from: `forkPoint`, or a checkpoint of
   * another abandoned branch it split off; undefined if its first node is a root. */
  fromId: string | undefined;
  /** The leaf's status: `error` for work abandoned after failing, `interrupted`
   * for work abandoned while waiting for a resume. */
  status: NodeStatus;
}

/** A thread's whole tree: every checkpoint of every namespace. */
export class ThreadTree {
  constructor(
    readonly threadId: string,
    /** The checkpoint LangGraph resumes from; undefined without a root-graph checkpoint. */
    readonly head: TreeNode | undefined,
    /** Parents before children: roots first, each followed depth-first by its subtree. */
    readonly nodes: readonly TreeNode[],
  ) {}

  /** The nodes on the live path, from the root to the head. */
  get livePath(): TreeNode[] {
    return this.nodes.filter((n) => n.onLivePath);
  }

  /** Checkpoints whose next step failed at least once. */
  get failures(): TreeNode[] {
    return this.nodes.filter((n) => n.hasError);
  }

  get(checkpointId: string, checkpointNs = ""): TreeNode | undefined {
    return this.nodes.find((n) => n.checkpointId === checkpointId && n.checkpointNs === checkpointNs);
  }

  children(checkpointId: string, checkpointNs = ""): TreeNode[] {
    return this.nodes.filter((n) => n.parentId === checkpointId && n.parentNs === checkpointNs);
  }
}

/**
 * One step of the live path with values (see docs/api.md, ResumeContext):
 * as the service sends it, snake_case keys included.
 */
export interface ResumeStep {
  checkpoint_id: string;
  checkpoint_ns: string;
  step: number;
  source: string;
  status: NodeStatus;
  tasks: {
    node: string;
    task_id: string;
    task_path: string;
    error?: string;
    interrupt?: string;
    writes: { channel: string; value: string; messages?: { role: string; id?: string; text: string; tool_calls?: string[] }[] }[];
  }[];
  abandoned: { from: string; checkpoints: number; status: NodeStatus; error?: string }[];
}

/** The live path as prompt text, and the whole tree as a text drawing. */
export class ResumeContext {
  constructor(
    /**
     * One line per checkpoint from the root to the head, e.g. `step 4 · error, retried` (a source
     * other than `loop` and a status other than `ok` are said);
     * with `values`, also what each step's nodes wrote and the branches abandoned there.
     */
    readonly text: string,
    readonly drawing: string,
    /** With `values`: the live path's steps, root first; [] without. */
    readonly steps: ResumeStep[] = [],
  ) {}

  toString(): string {
    return this.text;
  }
}

function bad(what: string): never {
  throw new BadResponseError("bad_response", what);
}

function str(value: unknown): string {
  return value === undefined || value === null ? "" : String(value);
}

export function nodeFromWire(wire: unknown): TreeNode {
  if (!isRecord(wire)) bad("malformed tree node");
  return node(
    wire.id,
    wire.ns,
    wire.parent,
    wire.parent_ns,
    wire.source,
    wire.step,
    wire.status,
    wire.has_error,
    wire.has_interrupt,
    wire.on_live_path,
    wire.orphan,
  );
}

/** A node from its fields' wire values, in the order of COLUMNS. */
function node(
  id: unknown,
  ns: unknown,
  parent: unknown,
  parentNs: unknown,
  source: unknown,
  step: unknown,
  status: unknown,
  hasError: unknown,
  hasInterrupt: unknown,
  onLivePath: unknown,
  orphan: unknown,
): TreeNode {
  if (typeof id !== "string") bad("malformed tree node");
  return {
    checkpointId: id,
    checkpointNs: str(ns),
    parentId: parent ? String(parent) : undefined,
    parentNs: str(parentNs),
    source: str(source),
    step: Number(step ?? 0),
    status: str(status) as NodeStatus,
    hasError: Boolean(hasError),
    hasInterrupt: Boolean(hasInterrupt),
    onLivePath: Boolean(onLivePath),
    orphan: Boolean(orphan),
  };
}

export function treeFromWire(wire: unknown): ThreadTree {
  if (!isRecord(wire) || !("columns" in wire || Array.isArray(wire.nodes))) bad("tree answered without a nodes list");
  return new ThreadTree(str(wire.thread_id), wire.head ? nodeFromWire(wire.head) : undefined, nodesFromWire(wire));
}

/** The nodes of an answer, as columns (asked for with layout=columns) or as one map per node. */
export function nodesFromWire(wire: unknown): TreeNode[] {
  if (isRecord(wire) && "columns" in wire) return nodesFromColumns(wire.columns);
  if (!isRecord(wire) || !Array.isArray(wire.nodes)) bad("tree query answered without a nodes list");
  return wire.nodes.map(nodeFromWire);
}

/** The arrays of an answer in columns (docs/api.md, EntryColumns). */
const COLUMNS = [
  "id",
  "ns",
  "parent",
  "parent_ns",
  "source",
  "step",
  "status",
  "has_error",
  "has_interrupt",
  "on_live_path",
  "orphan",
] as const;

// One array per field, node i at index i of each: a long answer (a live path
// of 10,000 nodes) is half the bytes of a map per node, and decodes faster.
function nodesFromColumns(columns: unknown): TreeNode[] {
  if (!isRecord(columns)) bad("tree columns are not a map");
  const first = columns.id;
  const count = Array.isArray(first) ? first.length : -1;
  const c = {} as Record<(typeof COLUMNS)[number], unknown[]>;
  for (const name of COLUMNS) {
    const col = columns[name];
    if (!Array.isArray(col) || col.length !== count) bad(`tree column '${name}' is not a list as long as 'id'`);
    c[name] = col;
  }
  const out: TreeNode[] = new Array(count);
  for (let i = 0; i < count; i++) {
    out[i] = node(
      c.id[i],
      c.ns[i],
      c.parent[i],
      c.parent_ns[i],
      c.source[i],
      c.step[i],
      c.status[i],
      c.has_error[i],
      c.has_interrupt[i],
      c.on_live_path[i],
      c.orphan[i],
    );
  }
  return out;
}

export function branchesFromWire(wire: unknown): Branch[] {
  if (!isRecord(wire) || !Array.isArray(wire.branches)) bad("abandoned answered without a branches list");
  return wire.branches.map((b): Branch => {
    if (!isRecord(b) || !Array.isArray(b.checkpoint_ids)) bad("malformed branch");
    return {
      checkpointIds: b.checkpoint_ids.map(String),
      forkPoint: b.fork_point ? String(b.fork_point) : undefined,
      fromId: b.from ? String(b.from) : undefined,
      status: str(b.status) as NodeStatus,
    };
  });
}

export function contextFromWire(wire: unknown): ResumeContext {
  if (!isRecord(wire) || typeof wire.text !== "string") bad("tree context answered without text");
  const context = wire.context;
  if (context !== undefined && context !== null && (!isRecord(context) || !Array.isArray(context.steps))) {
    bad("tree context answered without steps");
  }
  return new ResumeContext(wire.text, str(wire.drawing), isRecord(context) ? (context.steps as ResumeStep[]) : []);
}

/** The live messages as the service sends them: LangChain's stored message form. */
export function storedMessagesFromWire(wire: unknown): { type: string; data: Record<string, unknown> }[] {
  if (!isRecord(wire) || !Array.isArray(wire.messages)) bad("live messages answered without a messages list");
  return wire.messages.map((m) => {
    if (!isRecord(m) || typeof m.type !== "string" || !isRecord(m.data)) bad("malformed message");
    return { type: m.type, data: m.data };
  });
}
