import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import type { KvExport, PrefillResult } from "../engines/index.js";
import type { Logger } from "../observability/index.js";
import type { KvHandoff } from "../protocol/index.js";
import type { Clock } from "../runtime/index.js";
import type { TransferAgent } from "../transfer/index.js";

/** The notification a decode worker sends once it holds a handoff's bytes. */
export const handoffDoneMessage = (id: string): string => `kv-done:${id}`;

interface Held {
  readonly regionId: string | undefined;
  readonly path: string | undefined;
  readonly stop: AbortController;
}

/**
 * A prefill worker's exported KV waiting for decode workers: registered with the transfer agent
 * until the decode worker confirms (a notification) or the handoff expires; either way the region
 * and its file go.
 */
export class KvExports {
  readonly #agent: TransferAgent;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #ttlMs: number;
  readonly #held = new Map<string, Held>();
  readonly #stopListening: () => void;

  constructor(options: { agent: TransferAgent; clock: Clock; logger: Logger; ttlMs: number }) {
    this.#agent = options.agent;
    this.#clock = options.clock;
    this.#log = options.logger;
    this.#ttlMs = options.ttlMs;
    this.#stopListening = this.#agent.onNotification((_from, message) => {
      if (message.startsWith("kv-done:")) void this.free(message.slice("kv-done:".length), "confirmed");
    });
  }

  /** Where the engine should write the state of a new export. */
  newExport(): { id: string; path: string } {
    const id = randomUUID();
    return { id, path: this.#agent.sharedPath(`kv-${id}.state`) };
  }

  get size(): number {
    return this.#held.size;
  }

  /** Registers the engine's export and describes it for the decode worker. */
  async publish(
    id: string,
    workerId: string,
    request: { tokenIds: readonly number[] },
    result: PrefillResult,
  ): Promise<KvHandoff> {
    const kv = result.kv as KvExport;
    let regionId: string | undefined;
    let path: string | undefined;
    const descriptors = [];
    if (kv.format === "llamacpp-sequence-state") {
      path = kv.path;
      regionId = (await this.#agent.registerFile(kv.path, { id: `kv-${id}`, length: kv.bytes })).id;
      descriptors.push(this.#agent.describe(regionId));
    }
    if (regionId) {
      // Modelled exports hold nothing; real ones wait for the decode worker's confirmation.
      const stop = new AbortController();
      this.#held.set(id, { regionId, path, stop });
      this.#clock.sleep(this.#ttlMs, stop.signal).then(
        () => this.free(id, "expired"),
        () => undefined,
      );
    }
    return {
      id,
      prefillWorkerId: workerId,
      format: kv.format,
      descriptors,
      bytes: kv.bytes,
      agent: this.#agent.name,
      promptTokens: request.tokenIds.length,
      firstToken: result.firstToken as number,
      cachedTokens: result.cachedTokens,
      expiresInMs: this.#ttlMs,
    };
  }

  /** Frees an export (also a file the engine wrote before the export was published). */
  async free(id: string, why: "confirmed" | "expired" | "failed" | "closing", path?: string): Promise<void> {
    const held = this.#held.get(id);
    this.#held.delete(id);
    held?.stop.abort();
    if (held?.regionId) this.#agent.deregister(held.regionId);
    const file = held?.path ?? path;
    if (file) await rm(file, { force: true });
    if (why === "expired") this.#log.warn({ handoffId: id }, "KV handoff expired before a decode worker took it; freed");
  }

  async close(): Promise<void> {
    this.#stopListening();
    await Promise.all([...this.#held.keys()].map((id) => this.free(id, "closing")));
  }
}
