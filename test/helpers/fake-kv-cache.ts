import { createHash } from "node:crypto";
import { encode } from "@msgpack/msgpack";
import { Publisher, Router } from "zeromq";
import { freePort } from "./free-port.js";

/**
 * The engine inside the engine-server test doubles (vLLM, SGLang, TensorRT-LLM): a prefix cache of
 * whole blocks with engine hashes of its own (SHA-256 over the parent and the block's tokens, as
 * vLLM's default), and its ZMQ KV event publisher: a PUB of `[topic, seq u64 BE, msgpack
 * EventBatch]` with a ROUTER replay socket, events as tagged arrays (vLLM before mid-2026, SGLang,
 * TensorRT-LLM's V2 publisher) or maps (vLLM 0.26 on).
 */
export interface FakeKvCache {
  /**
   * Caches the prompt's full blocks (computed with adapter `lora`): returns how many of its tokens
   * were cached already, and publishes the new blocks as `BlockStored` (and any evicted beyond the
   * capacity as `BlockRemoved`).
   */
  admit(prompt: readonly number[], lora?: string | null): Promise<number>;
  /** Blocks held now. */
  readonly size: number;
  readonly eventsEndpoint: string;
  readonly replayEndpoint: string;
  /** Batches published so far. */
  readonly published: number;
  /** Publishes nothing for the next `n` batches' sequence numbers (they stay in the replay buffer). */
  dropNext(n: number): void;
  /**
   * TensorRT-LLM's `POST /kv_cache_events`: the events since the last call as its JSON (ids counting
   * on, a `created` first), forgotten once read.
   */
  takeTrtllmEvents(): string;
  /** Empties the cache and numbers batches from 0 again, as a restarted engine does. */
  restart(): void;
  close(): void;
}

export interface FakeKvCacheSettings {
  readonly blockSize: number;
  readonly form: "array" | "map";
  /** Blocks held; beyond it the least recently used are evicted, as vLLM's block pool does (default: no limit). */
  readonly capacityBlocks?: number | undefined;
}

export async function startFakeKvCache(settings: FakeKvCacheSettings): Promise<FakeKvCache> {
  const { blockSize, form } = settings;
  const cache = new Map<string, bigint>();
  const buffer: { seq: bigint; payload: Uint8Array }[] = [];
  let seq = 0n;
  let drop = 0;
  let published = 0;
  /** TensorRT-LLM's pull route's buffer: each event's `data`, its id given when read. */
  const pulled: Record<string, unknown>[] = [{ type: "created", num_blocks_per_cache_level: [4096, 0] }];
  let nextEventId = 0;

  const publisher = new Publisher({ linger: 0 });
  const router = new Router({ linger: 0 });
  const eventsPort = await freePort();
  const replayPort = await freePort();
  await publisher.bind(`tcp://127.0.0.1:${eventsPort}`);
  await router.bind(`tcp://127.0.0.1:${replayPort}`);
  void (async () => {
    try {
      for await (const [identity, , start] of router) {
        const from = Buffer.from(start as Uint8Array).readBigUInt64BE();
        for (const batch of buffer) {
          if (batch.seq >= from) await router.send([identity as Buffer, Buffer.alloc(0), u64(batch.seq), batch.payload]);
        }
        await router.send([identity as Buffer, Buffer.alloc(0), i64(-1n), Buffer.alloc(0)]);
      }
    } catch {
      // closed
    }
  })();

  const engineHash = (parent: bigint | null, tokens: readonly number[]): bigint =>
    createHash("sha256")
      .update(`${parent ?? "none"}:${tokens.join(",")}`)
      .digest()
      .readBigUInt64BE(0);

  const storedEvent = (hashes: bigint[], parent: bigint | null, tokens: number[], lora: string | null) =>
    form === "array"
      ? ["BlockStored", hashes, parent, tokens, blockSize, null, "GPU", lora, null]
      : {
          type: "BlockStored",
          block_hashes: hashes,
          parent_block_hash: parent,
          token_ids: tokens,
          block_size: blockSize,
          lora_id: null,
          medium: "GPU",
          lora_name: lora,
          extra_keys: hashes.map(() => null),
          group_idx: 0,
          kv_cache_spec_kind: "full_attention",
        };

  const removedEvent = (hashes: bigint[]) =>
    form === "array"
      ? ["BlockRemoved", hashes, "GPU"]
      : { type: "BlockRemoved", block_hashes: hashes, medium: "GPU", group_idx: 0, kv_cache_spec_kind: "full_attention" };

  const publish = async (events: unknown[]): Promise<void> => {
    const payload = encode([Date.now() / 1000, events, 0], { useBigInt64: true });
    const mine = seq++;
    buffer.push({ seq: mine, payload });
    if (buffer.length > 10_000) buffer.shift();
    if (drop > 0) {
      drop--;
      return;
    }
    published++;
    await publisher.send([Buffer.from("kv-events"), u64(mine), payload]);
  };

  /** Caches the prompt's full blocks (computed with adapter `lora`): how many were there already, and the events for the rest. */
  const admit = async (prompt: readonly number[], lora: string | null = null): Promise<number> => {
    let parent: bigint | null = null;
    let cached = 0;
    const fresh: bigint[] = [];
    const freshTokens: number[] = [];
    let freshParent: bigint | null = null;
    for (let b = 0; (b + 1) * blockSize <= prompt.length; b++) {
      const tokens = prompt.slice(b * blockSize, (b + 1) * blockSize);
      const key = `${lora}:${parent}:${tokens.join(",")}`;
      const known = cache.get(key);
      if (known !== undefined && fresh.length === 0) {
        cached += blockSize;
        parent = known;
        // Most recently used last: eviction takes from the front.
        cache.delete(key);
        cache.set(key, known);
        continue;
      }
      const hash = engineHash(parent, lora === null ? tokens : [...tokens, -1, ...Buffer.from(lora)]);
      if (fresh.length === 0) freshParent = parent;
      cache.set(key, hash);
      fresh.push(hash);
      freshTokens.push(...tokens);
      parent = hash;
    }
    const events: unknown[] = fresh.length > 0 ? [storedEvent(fresh, freshParent, freshTokens, lora)] : [];
    const evicted: bigint[] = [];
    const capacity = settings.capacityBlocks ?? Number.POSITIVE_INFINITY;
    for (const [key, hash] of cache) {
      if (cache.size <= capacity) break;
      cache.delete(key);
      evicted.push(hash);
    }
    if (evicted.length > 0) events.push(removedEvent(evicted));
    if (events.length > 0) await publish(events);
    if (fresh.length > 0) {
      const blocks = fresh.map((hash, i) => ({
        type: "stored_block",
        block_hash: hash,
        tokens: freshTokens
          .slice(i * blockSize, (i + 1) * blockSize)
          .map((id) => ({ type: "unique_token", token_id: id, token_extra_id: 0 })),
        cache_level: 0,
        priority: 35,
      }));
      pulled.push({ type: "stored", parent_hash: freshParent, blocks });
    }
    if (evicted.length > 0) pulled.push({ type: "removed", block_hashes: evicted });
    return cached;
  };

  return {
    admit,
    get size() {
      return cache.size;
    },
    eventsEndpoint: `tcp://127.0.0.1:${eventsPort}`,
    replayEndpoint: `tcp://127.0.0.1:${replayPort}`,
    get published() {
      return published;
    },
    dropNext(n) {
      drop = n;
    },
    takeTrtllmEvents() {
      const taken = pulled.splice(0).map((data) => ({ event_id: nextEventId++, data, window_size: blockSize * 1024 }));
      // TensorRT-LLM writes its 64-bit hashes as JSON integers.
      return JSON.stringify(taken, (_key, value) => (typeof value === "bigint" ? `__int${value}` : value)).replace(
        /"__int(\d+)"/g,
        "$1",
      );
    },
    restart() {
      cache.clear();
      buffer.length = 0;
      seq = 0n;
    },
    close() {
      publisher.close();
      router.close();
    },
  };
}

function u64(value: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(value);
  return b;
}

function i64(value: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(value);
  return b;
}
