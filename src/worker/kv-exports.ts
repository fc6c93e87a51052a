import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import type { KvExport, PrefillResult } from "../engines/index.js";
import type { Logger } from "../observability/index.js";
import { ArmatureError, type KvHandoff } from "../protocol/index.js";
import type { Clock } from "../runtime/index.js";
import type { TransferAgent } from "../transfer/index.js";

/** The notification a decode worker sends once it holds a handoff's bytes. */
export const handoffDoneMessage = (id: string): string => `kv-done:${id}`;

interface Held {
  readonly regionId: string | undefined;
  readonly path: string | undefined;
  readonly bytes: number;
  readonly stop: AbortController;
}

export interface KvExportsOptions {
  readonly agent: TransferAgent;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly ttlMs: number;
  /** Exports held or being written at once; a prefill beyond it is refused. Default 64. */
  readonly maxExports?: number | undefined;
  /** Bytes of exports held at once; an export that would pass it is refused. Default 1 GiB. */
  readonly maxBytes?: number | undefined;
  /**
   * A prefill is refused when the shared folder would keep less than this free after its export
   * (estimated from the bytes per prompt token of earlier exports). Default 16 MiB.
   */
  readonly minFreeBytes?: number | undefined;
  /**
   * The engine's exports are modelled, never written (the mocker): the shared folder's free space is
   * not checked and no file is removed, so no real I/O sits on a prefill's path (a replay in virtual
   * time needs that to repeat). Default false.
   */
  readonly modelledOnly?: boolean | undefined;
}

/**
 * A prefill worker's exported KV waiting for decode workers: registered with the transfer agent
 * until the decode worker confirms (a notification) or the handoff expires; either way the region
 * and its file go. Exports live in /dev/shm (64 MiB in Docker and Kubernetes by default), so they
 * are bounded in count and bytes and checked against the shared folder's free space; a prefill
 * over a bound is refused with a retryable `TRANSFER_FAILED` and the router prefills the request on
 * its decode worker instead.
 */
export class KvExports {
  readonly #agent: TransferAgent;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #ttlMs: number;
  readonly #maxExports: number;
  readonly #maxBytes: number;
  readonly #minFreeBytes: number;
  readonly #modelledOnly: boolean;
  readonly #held = new Map<string, Held>();
  /** Exports handed to the engine and not yet published or freed. */
  readonly #writing = new Set<string>();
  #heldBytes = 0;
  /** The most export bytes per prompt token seen, to size the next export before it is written. */
  #bytesPerToken = 0;
  readonly #stopListening: () => void;

  constructor(options: KvExportsOptions) {
    this.#agent = options.agent;
    this.#clock = options.clock;
    this.#log = options.logger;
    this.#ttlMs = options.ttlMs;
    this.#maxExports = options.maxExports ?? 64;
    this.#maxBytes = options.maxBytes ?? 1 << 30;
    this.#minFreeBytes = options.minFreeBytes ?? 16 << 20;
    this.#modelledOnly = options.modelledOnly ?? false;
    this.#stopListening = this.#agent.onNotification((_from, message) => {
      if (message.startsWith("kv-done:")) void this.free(message.slice("kv-done:".length), "confirmed");
    });
  }

  /**
   * Where the engine should write the state of a new export for a prompt of `promptTokens`. Throws a
   * retryable `TRANSFER_FAILED` when the exports are at their cap in count or bytes, or the shared
   * folder is short of space; nothing is reserved then.
   */
  async newExport(promptTokens: number): Promise<{ id: string; path: string }> {
    if (this.#held.size + this.#writing.size >= this.#maxExports) {
      throw full(`${this.#maxExports} KV exports are already waiting for decode workers (maxExports)`);
    }
    if (this.#heldBytes >= this.#maxBytes) {
      throw full(`the waiting KV exports hold ${this.#heldBytes} bytes, the cap is ${this.#maxBytes} (maxBytes)`);
    }
    if (!this.#modelledOnly) {
      const expected = Math.ceil(this.#bytesPerToken * promptTokens);
      const free = await this.#agent.sharedFreeBytes();
      if (free - expected < this.#minFreeBytes) {
        throw full(
          `${this.#agent.sharedDir} has ${free} bytes free; an export of ~${expected} must leave ${this.#minFreeBytes} (minFreeBytes; in Docker raise --shm-size)`,
        );
      }
    }
    const id = randomUUID();
    this.#writing.add(id);
    return { id, path: this.#agent.sharedPath(`kv-${id}.state`) };
  }

  get size(): number {
    return this.#held.size;
  }

  /** Bytes of the exports waiting now. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** Registers the engine's export and describes it for the decode worker. */
  async publish(
    id: string,
    workerId: string,
    request: { tokenIds: readonly number[] },
    result: PrefillResult,
  ): Promise<KvHandoff> {
    const kv = result.kv as KvExport;
    if (kv.format === "llamacpp-sequence-state") {
      // Modelled exports (the mocker) write nothing and take no room; an engine server keeps its own.
      if (this.#heldBytes + kv.bytes > this.#maxBytes) {
        throw full(`an export of ${kv.bytes} bytes would take the waiting exports over ${this.#maxBytes} bytes (maxBytes)`);
      }
      const exported = request.tokenIds.length - (kv.fromToken ?? 0);
      this.#bytesPerToken = Math.max(this.#bytesPerToken, kv.bytes / Math.max(1, exported));
    }
    let regionId: string | undefined;
    let path: string | undefined;
    const descriptors = [];
    if (kv.format === "llamacpp-sequence-state") {
      path = kv.path;
      regionId = (await this.#agent.registerFile(kv.path, { id: `kv-${id}`, length: kv.bytes })).id;
      descriptors.push(this.#agent.describe(regionId));
    }
    this.#writing.delete(id);
    if (regionId) {
      // Modelled exports hold nothing; real ones wait for the decode worker's confirmation.
      const stop = new AbortController();
      this.#held.set(id, { regionId, path, bytes: kv.bytes, stop });
      this.#heldBytes += kv.bytes;
      this.#clock.sleep(this.#ttlMs, stop.signal).then(
        () => this.free(id, "expired"),
        () => undefined,
      );
    }
    return {
      id,
      prefillWorkerId: workerId,
      format: kv.format,
      ...(kv.format === "engine-transfer-params" ? { engineParams: kv.params } : {}),
      descriptors,
      bytes: kv.bytes,
      agent: this.#agent.name,
      promptTokens: request.tokenIds.length,
      ...(kv.fromToken ? { fromToken: kv.fromToken, wholeBytes: kv.wholeBytes } : {}),
      ...(result.firstToken === undefined ? {} : { firstToken: result.firstToken }),
      cachedTokens: result.cachedTokens,
      expiresInMs: this.#ttlMs,
    };
  }

  /** Frees an export (also a file the engine wrote before the export was published). */
  async free(id: string, why: "confirmed" | "expired" | "failed" | "closing", path?: string): Promise<void> {
    const held = this.#held.get(id);
    this.#held.delete(id);
    this.#writing.delete(id);
    if (held) this.#heldBytes -= held.bytes;
    held?.stop.abort();
    if (held?.regionId) this.#agent.deregister(held.regionId);
    const file = held?.path ?? (this.#modelledOnly ? undefined : path);
    if (file) await rm(file, { force: true });
    if (why === "expired") this.#log.warn({ handoffId: id }, "KV handoff expired before a decode worker took it; freed");
  }

  async close(): Promise<void> {
    this.#stopListening();
    await Promise.all([...this.#held.keys()].map((id) => this.free(id, "closing")));
  }
}

function full(why: string): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `KV export refused: ${why}; the request is prefilled on its decode worker`, {
    retryable: true,
  });
}
