import type { KvEvent, StorageTier } from "../../protocol/index.js";

/** What a cache knows of one block: its parent's hash and the local hash of its tokens. */
export interface CachedBlock {
  readonly parent: bigint | null;
  readonly tokensHash: bigint;
}

/**
 * A cache's blocks as one stored event each, parents before children (what a reader rebuilding
 * the index needs). A block whose parent is not in the cache is left out: no prefix match reaches it.
 */
export function storedEventsParentsFirst(
  blocks: ReadonlyMap<bigint, CachedBlock>,
  blockSize: number,
  storageTier?: StorageTier,
): KvEvent[] {
  const events: KvEvent[] = [];
  const emitted = new Set<bigint>();
  let progress = true;
  while (progress) {
    progress = false;
    for (const [hash, block] of blocks) {
      if (emitted.has(hash) || (block.parent !== null && !emitted.has(block.parent))) continue;
      emitted.add(hash);
      progress = true;
      events.push({
        type: "kv-block-stored",
        parentHash: block.parent,
        blocks: [{ blockHash: hash, tokensHash: block.tokensHash }],
        blockSize,
        ...(storageTier ? { storageTier } : {}),
      });
    }
  }
  return events;
}
