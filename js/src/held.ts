/**
 * The last delta history the saver read per thread, to ask only for what is new.
 *
 * A DeltaChannel turn asks for the history at the thread's newest checkpoint,
 * whose chain is the last turn's plus a few checkpoints. The saver keeps the
 * history it last put together per (thread, namespace), still on the wire, and
 * names its checkpoint as `known` in the next request: the service walks down
 * to it and answers the writes since, each channel whose history goes on there
 * saying so with `next` equal to `known`; the held history goes before them.
 *
 * The held history is the history at an ancestor of the new target (the
 * service refuses a `known` the chain does not reach), made of the writes of
 * that ancestor's own ancestors, which LangGraph never writes to again once
 * they have a child. As for the service's chain cache, the store does not
 * enforce that rule: the saver's own writes to an older checkpoint drop the
 * entry, and its deletes, prunes and copies drop the threads'. Bounded in
 * entries and in bytes of values, the least recently used dropped first.
 */

type Wire = Record<string, unknown>;

/** A channel's history on the wire: writes oldest first, and the seed. */
export interface RawHistory {
  writes: Wire[];
  seed: Wire | null;
}

interface Entry {
  thread: string;
  checkpointId: string;
  histories: Record<string, RawHistory>;
  size: number;
}

export const HELD_ENTRIES = 256;
export const HELD_BYTES = 64 << 20;
const OVERHEAD = 100;

function valueSize(v: unknown): number {
  const data = v !== null && typeof v === "object" ? (v as Wire).data : undefined;
  if (data instanceof Uint8Array) return data.length + OVERHEAD;
  if (typeof data === "string") return data.length + OVERHEAD;
  return OVERHEAD;
}

export class Held {
  private readonly entries = new Map<string, Entry>();
  private size = 0;

  constructor(
    private readonly maxEntries = HELD_ENTRIES,
    private readonly maxBytes = HELD_BYTES,
  ) {}

  private static key(thread: string, ns: string): string {
    return `${thread}\u0000${ns}`;
  }

  /**
   * The checkpoint to name as known for a history of channels at checkpointId,
   * and its histories; undefined when none is held for all of them, or the one
   * held is at a later checkpoint. Held at checkpointId itself, they are the answer.
   */
  known(thread: string, ns: string, checkpointId: string, channels: string[]): Entry | undefined {
    const k = Held.key(thread, ns);
    const e = this.entries.get(k);
    if (e === undefined || !checkpointId || e.checkpointId > checkpointId) return undefined;
    if (!channels.every((ch) => Object.hasOwn(e.histories, ch))) return undefined;
    this.entries.delete(k);
    this.entries.set(k, e);
    return e;
  }

  keep(thread: string, ns: string, checkpointId: string, histories: Record<string, RawHistory>): void {
    if (!checkpointId) return;
    let size = 0;
    for (const h of Object.values(histories)) {
      for (const w of h.writes) size += valueSize(w.value);
      if (h.seed !== null) size += valueSize(h.seed);
    }
    const k = Held.key(thread, ns);
    this.pop(k);
    if (size > this.maxBytes) return;
    this.entries.set(k, { thread, checkpointId, histories: { ...histories }, size });
    this.size += size;
    while (this.size > this.maxBytes || this.entries.size > this.maxEntries) {
      this.pop(this.entries.keys().next().value as string);
    }
  }

  /** Writes came for a checkpoint: a history held at a later one may hold them. */
  wrote(thread: string, ns: string, checkpointId: string): void {
    const k = Held.key(thread, ns);
    const e = this.entries.get(k);
    if (e !== undefined && checkpointId < e.checkpointId) this.pop(k);
  }

  forget(thread: string, ns: string): void {
    this.pop(Held.key(thread, ns));
  }

  /** Threads were deleted, pruned or copied over. */
  dropThreads(threads: string[]): void {
    const set = new Set(threads.map(String));
    for (const [k, e] of [...this.entries]) if (set.has(e.thread)) this.pop(k);
  }

  clear(): void {
    this.entries.clear();
    this.size = 0;
  }

  private pop(k: string): void {
    const e = this.entries.get(k);
    if (e === undefined) return;
    this.entries.delete(k);
    this.size -= e.size;
  }
}
