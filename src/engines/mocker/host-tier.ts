import { type KvEventSink, KvTier } from "./kv-tier.js";

/**
 * The mocker's host tier (KVBM's G2, pinned host memory): a write-through copy of the blocks the
 * device registers, evicted least-recently-used at its own capacity. A block the device evicted can
 * come back from here by a copy instead of a recomputation. Its changes are KV events with storage
 * tier `host_pinned`, so a router can count what a worker keeps on its host.
 */
export class HostTier extends KvTier {
  constructor(capacity: number, blockSize: number, emit: KvEventSink) {
    super("host_pinned", capacity, blockSize, emit);
  }
}
