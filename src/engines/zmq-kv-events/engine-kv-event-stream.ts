import { Dealer, Subscriber } from "zeromq";
import type { KvEvent } from "../../protocol/index.js";
import { decodeEventBatch, EventBatchError } from "./event-batch-decoder.js";

export interface EngineKvEventStreamOptions {
  /** The engine's PUB socket (`--kv-events-config`'s `endpoint`, port + data-parallel rank). */
  readonly endpoint: string;
  /** Its ROUTER socket for missed batches (`replay_endpoint`); absent: gaps are counted, not filled. */
  readonly replayEndpoint?: string | undefined;
  /** The router's block size: events of another size are a loud error. */
  readonly blockSize: number;
  /** Events in the order the engine's cache changed them. */
  onEvents(events: KvEvent[]): void;
  /** A message that was dropped (malformed, a gap not filled, events of another group): counted by the caller. */
  onDropped(reason: string): void;
  /** A configuration error that makes every event useless (the block size): said loudly, once. */
  onFatal(message: string): void;
}

/**
 * Subscribes to an engine's ZMQ KV event publisher: multipart messages `[topic, seq u64 big-endian,
 * msgpack batch]`, every topic. Sequence numbers are checked: a gap is filled from the replay socket
 * (a DEALER sends `["", start seq]`; the ROUTER answers `["", seq, batch]` per buffered batch and
 * ends with seq -1 and an empty payload); a sequence that starts again at 0 means the engine
 * restarted, so everything known of it is cleared first. Nothing a publisher sends can throw here.
 */
export class EngineKvEventStream {
  readonly #o: EngineKvEventStreamOptions;
  readonly #socket = new Subscriber({ linger: 0, reconnectInterval: 100, reconnectMaxInterval: 5000 });
  #expected: bigint | undefined;
  #fatal = false;
  #closed = false;
  #loop: Promise<void> | undefined;

  constructor(options: EngineKvEventStreamOptions) {
    this.#o = options;
  }

  start(): void {
    this.#socket.connect(this.#o.endpoint);
    this.#socket.subscribe();
    this.#loop = this.#receive();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#socket.close();
    await this.#loop?.catch(() => undefined);
  }

  async #receive(): Promise<void> {
    try {
      for await (const frames of this.#socket) await this.handle(frames);
    } catch (error) {
      if (!this.#closed) this.#o.onDropped(`the subscription stopped: ${(error as Error).message}`);
    }
  }

  /** One multipart message, as the socket delivers it (exposed for tests of the sequencing). */
  async handle(frames: readonly Uint8Array[]): Promise<void> {
    if (this.#fatal) return;
    if (frames.length !== 3) return this.#o.onDropped(`a message of ${frames.length} frames, not 3`);
    const seq = readSeq(frames[1] as Uint8Array);
    if (seq === undefined) return this.#o.onDropped("a sequence number that is not 8 bytes");
    const expected = this.#expected;
    if (expected !== undefined && seq === 0n && expected > 0n) {
      // The engine restarted: its cache is empty, whatever it had before.
      this.#o.onEvents([{ type: "kv-cache-cleared" }]);
    } else if (expected !== undefined && seq < expected) {
      return this.#o.onDropped(`batch ${seq} again (expected ${expected})`);
    } else if (seq > (expected ?? 0n)) {
      await this.#replay(expected ?? 0n, seq);
    }
    this.#apply(seq, frames[2] as Uint8Array);
  }

  #apply(seq: bigint, payload: Uint8Array): void {
    this.#expected = seq + 1n;
    try {
      const batch = decodeEventBatch(payload, this.#o.blockSize);
      for (const reason of batch.skipped) this.#o.onDropped(reason);
      if (batch.events.length > 0) this.#o.onEvents(batch.events);
    } catch (error) {
      if (error instanceof EventBatchError && error.kind === "block-size") {
        this.#fatal = true;
        this.#o.onFatal(error.message);
      } else {
        this.#o.onDropped(`batch ${seq}: ${(error as Error).message}`);
      }
    }
  }

  /** Batches [from, to) from the replay socket; what it cannot give is a counted gap. */
  async #replay(from: bigint, to: bigint): Promise<void> {
    if (!this.#o.replayEndpoint) return this.#o.onDropped(`batches ${from}..${to - 1n} missed (no replay endpoint)`);
    const dealer = new Dealer({ linger: 0, receiveTimeout: 2000, sendTimeout: 2000 });
    try {
      dealer.connect(this.#o.replayEndpoint);
      await dealer.send([Buffer.alloc(0), seqBytes(from)]);
      for (;;) {
        const frames = await dealer.receive();
        const seq = readSeq((frames.length === 3 ? frames[1] : frames[0]) as Uint8Array, true);
        const payload = frames.at(-1) as Uint8Array;
        if (seq === undefined || seq < 0n || payload.length === 0) break;
        if (seq >= to) break;
        if (seq >= (this.#expected ?? 0n)) this.#apply(seq, payload);
      }
    } catch (error) {
      this.#o.onDropped(`replay of batches from ${from} failed: ${(error as Error).message}`);
    } finally {
      dealer.close();
    }
    if ((this.#expected ?? 0n) < to)
      this.#o.onDropped(`batches ${this.#expected ?? 0n}..${to - 1n} missed (not in the replay buffer)`);
  }
}

function readSeq(frame: Uint8Array, signed = false): bigint | undefined {
  if (frame.length !== 8) return undefined;
  const view = new DataView(frame.buffer, frame.byteOffset, 8);
  return signed ? view.getBigInt64(0) : view.getBigUint64(0);
}

function seqBytes(seq: bigint): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(seq);
  return out;
}
