import type { KvBlockStored } from "../../protocol/index.js";
import { TripleKeyTable } from "./triple-key-table.js";

/** Outcome of applying one KV event, as Dynamo's `kv_cache_events_applied{status}` counts it. */
export type ApplyStatus = "ok" | "parent_block_not_found" | "block_not_found" | "invalid_block";

/** Per-worker overlap with a query: leading blocks held, and each worker's tree size. */
export interface OverlapScores {
  /** Worker id → number of leading query blocks it holds (absent = 0). */
  readonly scores: Map<string, number>;
  /** Worker id → number of blocks it holds in the tree. Shared: read it, do not change it. */
  readonly treeSizes: Map<string, number>;
  /**
   * Worker id → leading query blocks it can have without recomputing them, on its device or a lower
   * tier (host, disk, or the shared external tier), when workers report such tiers. `scores` and
   * `treeSizes` count the device alone.
   */
  readonly lowerTierScores?: Map<string, number>;
  /** Worker id → of those beyond its device prefix, how many each lower tier gives (fastest tier first). */
  readonly lowerTierBlocks?: Map<string, LowerTierBlocks>;
  /** Leading query blocks on the shared external tier: any worker not in `lowerTierBlocks` can load them. */
  readonly sharedBlocks?: number;
}

/** Blocks a worker would load back from each lower tier. */
export interface LowerTierBlocks {
  readonly host: number;
  readonly disk: number;
  readonly external: number;
}

const ROOT = 0;
const NONE = -1;
/** Fields of a node record. */
const PARENT = 0;
const TOK_HI = 1;
const TOK_LO = 2;
const CHILDREN = 3;
const HOLDER = 4;
/** 1 when `#moreHolders` has an entry for the node (spares a Map lookup for single-holder nodes). */
const MORE = 5;
const FIELDS = 6;

function newNodeRecords(nodes: number): Int32Array {
  const records = new Int32Array(nodes * FIELDS);
  for (let at = HOLDER; at < records.length; at += FIELDS) records[at] = NONE;
  return records;
}

/** u64 → two u32 halves without allocating (one scratch buffer). */
const scratch = new DataView(new ArrayBuffer(8));
let HI = 0;
let LO = 0;
function split(hash: bigint): void {
  scratch.setBigUint64(0, hash, true);
  LO = scratch.getUint32(0, true);
  HI = scratch.getUint32(4, true);
}

/**
 * Which worker holds which KV blocks, with the semantics of Dynamo's radix tree: nodes keyed by
 * the local hash of their tokens under their parent, each naming the workers that hold it; per
 * worker a lookup from the engine's block hash to its node, for parent links and removals.
 *
 * Laid out for a router that indexes millions of blocks: worker ids are interned to small ints,
 * nodes live in parallel typed arrays, and both maps — (parent, tokens hash) → child and
 * (worker, block hash) → node — are open-addressing tables over Int32Arrays, so an index entry
 * costs no JavaScript object and no bigint. A node that no worker holds leaves its parent's table
 * at once (unreachable for matching, as in Dynamo) and is recycled when its last child goes.
 */
export class RadixTree {
  readonly #workerIds: string[] = [];
  readonly #workerIndex = new Map<string, number>();
  readonly #blockCounts: number[] = [];
  /** Per-worker block counts as a Map, rebuilt for `findMatches` only after they changed. */
  #treeSizes = new Map<string, number>();
  #treeSizesStale = false;
  readonly #children = new TripleKeyTable(1024);
  readonly #lookup = new TripleKeyTable(1024);
  /**
   * Node records side by side (one cache line holds a node): parent, tokens hash halves, child
   * count, first holder (NONE when none) and whether further holders sit in `#moreHolders`.
   */
  #node = newNodeRecords(1024);
  readonly #moreHolders = new Map<number, number[]>();
  /** Nodes no worker holds and no table references, ready for reuse. */
  readonly #free: number[] = [];
  #nodes = 1;
  /** Per-worker marks for intersecting holders in `findMatches`. */
  #marks = new Int32Array(64);
  #epoch = 0;
  #scratchHi = new Uint32Array(128);
  #scratchLo = new Uint32Array(128);

  /**
   * Stores a chain of blocks for `workerId` under the block named by `parentHash` (the root when
   * null). Fails, changing nothing, when the parent is unknown for that worker or a block hash
   * repeats within the event or names its own parent.
   */
  applyStored(workerId: string, event: Pick<KvBlockStored, "parentHash" | "blocks">): ApplyStatus {
    const w = this.#intern(workerId);
    let node = ROOT;
    if (event.parentHash !== null) {
      split(event.parentHash);
      node = this.#lookup.get(w, HI, LO);
      if (node === NONE) return "parent_block_not_found";
    }
    const blocks = event.blocks;
    const halves = this.#splitBlockHashes(blocks);
    if (!distinct(event.parentHash, blocks, halves)) return "invalid_block";
    for (let i = 0; i < blocks.length; i++) {
      split((blocks[i] as KvBlockStored["blocks"][number]).tokensHash);
      // The next free node is claimed only if the child is new (one probe either way).
      const candidate = this.#peekFreeNode();
      let child = this.#children.getOrSet(node, HI, LO, candidate);
      if (child === NONE) {
        child = this.#newNode(node, HI, LO);
        this.#node[node * FIELDS + CHILDREN] = (this.#node[node * FIELDS + CHILDREN] as number) + 1;
      }
      this.#addHolder(child, w);
      const previous = this.#lookup.put(w, halves.hi[i] as number, halves.lo[i] as number, child);
      if (previous === NONE) this.#setCount(w, 1);
      else if (previous !== child) this.#dropHolder(previous, w);
      node = child;
    }
    return "ok";
  }

  /**
   * Drops the worker from each named block (no cascade to descendants). Unknown hashes are
   * skipped; the result is `block_not_found` if any was, after the rest applied.
   */
  applyRemoved(workerId: string, blockHashes: readonly bigint[]): ApplyStatus {
    const w = this.#workerIndex.get(workerId);
    let status: ApplyStatus = "ok";
    for (const hash of blockHashes) {
      split(hash);
      const node = w === undefined ? NONE : this.#lookup.take(w, HI, LO);
      if (node === NONE || w === undefined) {
        status = "block_not_found";
        continue;
      }
      this.#setCount(w, -1);
      this.#dropHolder(node, w);
    }
    return status;
  }

  /** Removes every block of the worker (a `cleared` event, or the worker left discovery). */
  removeWorker(workerId: string): void {
    const w = this.#workerIndex.get(workerId);
    if (w === undefined) return;
    const entries: number[] = [];
    this.#lookup.forEachOf(w, (hi, lo, node) => entries.push(hi, lo, node));
    for (let i = 0; i < entries.length; i += 3) {
      this.#lookup.delete(w, entries[i] as number, entries[i + 1] as number);
      this.#dropHolder(entries[i + 2] as number, w);
    }
    this.#blockCounts[w] = 0;
    this.#treeSizesStale = true;
  }

  /** Walks the query's local hashes from the root; a worker drops out at the first block it lacks. */
  findMatches(localHashes: readonly bigint[]): OverlapScores {
    const scores = new Map<string, number>();
    let node = ROOT;
    let active: number[] = [];
    let depth = 0;
    for (; depth < localHashes.length; depth++) {
      split(localHashes[depth] as bigint);
      const child = this.#children.get(node, HI, LO);
      if (child === NONE) break;
      const next = depth === 0 ? this.#holdersOf(child) : this.#intersect(active, child);
      if (next.length < active.length) {
        // Workers that do not hold this block matched up to the one before.
        const kept = this.#markAll(next);
        for (const w of active) if (this.#marks[w] !== kept) scores.set(this.#workerIds[w] as string, depth);
      }
      active = next;
      if (active.length === 0) break;
      node = child;
    }
    for (const w of active) scores.set(this.#workerIds[w] as string, depth);
    return { scores, treeSizes: this.#currentTreeSizes() };
  }

  /**
   * The holders of each block along the query's path from the root, as far as the tree has the
   * path (whoever holds them: unlike `findMatches`, a holder missing one block is not dropped).
   */
  pathHolders(localHashes: readonly bigint[]): string[][] {
    const path: string[][] = [];
    let node = ROOT;
    for (const hash of localHashes) {
      split(hash);
      const child = this.#children.get(node, HI, LO);
      if (child === NONE) break;
      path.push(this.#holdersOf(child).map((w) => this.#workerIds[w] as string));
      node = child;
    }
    return path;
  }

  /**
   * Sizes the tables and node arrays for `blocks` indexed blocks at once, so a router that knows
   * its fleet's KV capacity (from the model cards) never rehashes millions of entries while serving.
   */
  reserve(blocks: number): void {
    this.#children.reserve(blocks);
    this.#lookup.reserve(blocks);
    while (this.#node.length < (blocks + 1) * FIELDS) this.#growNodes();
  }

  /** Blocks a worker holds. */
  blockCount(workerId: string): number {
    const w = this.#workerIndex.get(workerId);
    return w === undefined ? 0 : (this.#blockCounts[w] ?? 0);
  }

  /** The block hashes of an event as u32 halves, in reused scratch arrays. */
  #splitBlockHashes(blocks: KvBlockStored["blocks"]): { hi: Uint32Array; lo: Uint32Array } {
    if (this.#scratchHi.length < blocks.length) {
      this.#scratchHi = new Uint32Array(blocks.length * 2);
      this.#scratchLo = new Uint32Array(blocks.length * 2);
    }
    for (let i = 0; i < blocks.length; i++) {
      split((blocks[i] as KvBlockStored["blocks"][number]).blockHash);
      this.#scratchHi[i] = HI;
      this.#scratchLo[i] = LO;
    }
    return { hi: this.#scratchHi, lo: this.#scratchLo };
  }

  #intern(workerId: string): number {
    let w = this.#workerIndex.get(workerId);
    if (w === undefined) {
      w = this.#workerIds.length;
      this.#workerIds.push(workerId);
      this.#workerIndex.set(workerId, w);
      this.#blockCounts.push(0);
      if (this.#marks.length <= w) {
        const marks = new Int32Array(this.#marks.length * 2);
        marks.set(this.#marks);
        this.#marks = marks;
      }
    }
    return w;
  }

  #setCount(w: number, delta: number): void {
    this.#blockCounts[w] = (this.#blockCounts[w] as number) + delta;
    this.#treeSizesStale = true;
  }

  #currentTreeSizes(): Map<string, number> {
    if (this.#treeSizesStale) {
      // A new Map each time: callers may still hold the previous one.
      const sizes = new Map<string, number>();
      for (const [w, count] of this.#blockCounts.entries()) if (count > 0) sizes.set(this.#workerIds[w] as string, count);
      this.#treeSizes = sizes;
      this.#treeSizesStale = false;
    }
    return this.#treeSizes;
  }

  #holdersOf(node: number): number[] {
    const first = this.#node[node * FIELDS + HOLDER] as number;
    if (first === NONE) return [];
    if (this.#node[node * FIELDS + MORE] === 0) return [first];
    return [first, ...(this.#moreHolders.get(node) as number[])];
  }

  /** Marks `workers` with a fresh epoch; returns it. */
  #markAll(workers: readonly number[]): number {
    const epoch = ++this.#epoch;
    for (const w of workers) this.#marks[w] = epoch;
    return epoch;
  }

  /** The workers of `active` that also hold `node`. */
  #intersect(active: readonly number[], node: number): number[] {
    const first = this.#node[node * FIELDS + HOLDER] as number;
    if (first === NONE) return [];
    if (this.#node[node * FIELDS + MORE] === 0) return active.includes(first) ? [first] : [];
    const more = this.#moreHolders.get(node) as number[];
    const epoch = this.#markAll(active);
    const out: number[] = [];
    if (this.#marks[first] === epoch) out.push(first);
    for (const w of more) if (this.#marks[w] === epoch) out.push(w);
    return out;
  }

  #addHolder(node: number, w: number): void {
    const first = this.#node[node * FIELDS + HOLDER] as number;
    if (first === NONE) {
      this.#node[node * FIELDS + HOLDER] = w;
      return;
    }
    if (first === w) return;
    if (this.#node[node * FIELDS + MORE] === 0) {
      this.#moreHolders.set(node, [w]);
      this.#node[node * FIELDS + MORE] = 1;
      return;
    }
    const more = this.#moreHolders.get(node) as number[];
    if (!more.includes(w)) more.push(w);
  }

  #dropHolder(node: number, w: number): void {
    const at = node * FIELDS;
    if (this.#node[at + MORE] === 0) {
      if (this.#node[at + HOLDER] !== w) return;
      this.#node[at + HOLDER] = NONE;
      this.#detach(node);
      return;
    }
    const more = this.#moreHolders.get(node) as number[];
    if (this.#node[at + HOLDER] === w) this.#node[at + HOLDER] = more.pop() as number;
    else {
      const i = more.indexOf(w);
      if (i >= 0) more.splice(i, 1);
    }
    if (more.length === 0) {
      this.#moreHolders.delete(node);
      this.#node[at + MORE] = 0;
    }
  }

  /**
   * Nobody holds the node: it leaves its parent's children (its subtree is unreachable for
   * matching), and is recycled once no child hangs below it, its parent too when that empties it.
   */
  #detach(node: number): void {
    for (let n = node; n !== ROOT && this.#node[n * FIELDS + HOLDER] === NONE; ) {
      const parent = this.#node[n * FIELDS + PARENT] as number;
      if (parent === NONE) {
        // Already detached: recycle once its last child has gone.
        if (this.#node[n * FIELDS + CHILDREN] === 0) this.#recycle(n);
        return;
      }
      this.#children.delete(parent, this.#node[n * FIELDS + TOK_HI] as number, this.#node[n * FIELDS + TOK_LO] as number);
      this.#node[n * FIELDS + PARENT] = NONE;
      this.#node[parent * FIELDS + CHILDREN] = (this.#node[parent * FIELDS + CHILDREN] as number) - 1;
      if (this.#node[n * FIELDS + CHILDREN] === 0) this.#recycle(n);
      // A detached parent whose last child just went can be recycled too.
      if (
        parent !== ROOT &&
        this.#node[parent * FIELDS + PARENT] === NONE &&
        this.#node[parent * FIELDS + HOLDER] === NONE &&
        this.#node[parent * FIELDS + CHILDREN] === 0
      ) {
        this.#recycle(parent);
      }
      return;
    }
  }

  #recycle(node: number): void {
    this.#node[node * FIELDS + CHILDREN] = 0;
    this.#free.push(node);
  }

  /** The node `#newNode` will hand out next. */
  #peekFreeNode(): number {
    return this.#free.length > 0 ? (this.#free[this.#free.length - 1] as number) : this.#nodes;
  }

  #newNode(parent: number, hi: number, lo: number): number {
    let node = this.#free.pop();
    if (node === undefined) {
      node = this.#nodes++;
      if ((node + 1) * FIELDS > this.#node.length) this.#growNodes();
    }
    const at = node * FIELDS;
    const records = this.#node;
    records[at + PARENT] = parent;
    records[at + TOK_HI] = hi;
    records[at + TOK_LO] = lo;
    records[at + CHILDREN] = 0;
    records[at + HOLDER] = NONE;
    records[at + MORE] = 0;
    return node;
  }

  #growNodes(): void {
    const grown = newNodeRecords((this.#node.length / FIELDS) * 2);
    grown.set(this.#node);
    this.#node = grown;
  }
}

/** No block hash repeats within the event, and none names the event's parent. */
function distinct(
  parentHash: bigint | null,
  blocks: KvBlockStored["blocks"],
  halves: { hi: Uint32Array; lo: Uint32Array },
): boolean {
  if (parentHash !== null) for (const block of blocks) if (block.blockHash === parentHash) return false;
  if (blocks.length < 2) return true;
  // Sorted low halves side by side; an equal pair is checked in full (hashes are XXH3: rare).
  const lows = halves.lo.slice(0, blocks.length).sort();
  for (let i = 1; i < lows.length; i++) {
    if (lows[i] === lows[i - 1]) return new Set(blocks.map((b) => b.blockHash)).size === blocks.length;
  }
  return true;
}
