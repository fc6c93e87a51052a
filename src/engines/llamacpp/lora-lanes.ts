import type { LlamaContext, LlamaModel } from "node-llama-cpp";
import { ArmatureError, type KvEvent } from "../../protocol/index.js";
import { KvBlockTracker } from "./kv-block-tracker.js";
import { type ContextSettings, createContext } from "./llama-context.js";
import { checkLoraFile } from "./lora-file.js";
import { SequenceSlots } from "./sequence-slots.js";

/** Sequences that share one set of weights: the base model's, or the base model with one adapter. */
export interface SequenceLane {
  /** The adapter's name; undefined for the base model. */
  readonly lora: string | undefined;
  readonly slots: SequenceSlots;
  /** KV events of the lane's sequences, hashed with the adapter's seed (blocks of different weights never match). */
  readonly tracker: KvBlockTracker;
}

interface AdapterLane extends SequenceLane {
  readonly lora: string;
  readonly context: LlamaContext;
  users: number;
}

export interface LoraLanesOptions {
  readonly model: LlamaModel;
  /** The base context's settings: an adapter's context is made alike. */
  readonly context: ContextSettings;
  /** Adapter contexts held at once (`--max-loras`); the least recently used idle one goes first. */
  readonly maxLoras: number;
  readonly blockSize: number;
  readonly emit: (events: readonly KvEvent[]) => void;
}

/**
 * The LoRA adapters a llama.cpp worker serves (`--lora NAME=PATH`, or loaded at run time). llama.cpp
 * applies an adapter to a whole context, so each resident adapter has a context of its own, made
 * like the base one, with its own sequences: at most `maxLoras` at once, the least recently used
 * idle one disposed to make room (its blocks leave the KV index with it); a request for an adapter
 * that finds every resident one busy waits for one to go idle. node-llama-cpp keeps an adapter's
 * weights in memory until the model is disposed: `maxLoras` bounds the adapters' KV caches.
 */
export class LoraLanes {
  readonly #o: LoraLanesOptions;
  readonly #paths = new Map<string, string>();
  /** Resident lanes, least recently used first. */
  readonly #resident = new Map<string, AdapterLane>();
  readonly #making = new Map<string, Promise<AdapterLane>>();
  readonly #idleWaiters = new Set<() => void>();
  readonly #changeListeners = new Set<() => void>();
  #closed = false;

  constructor(options: LoraLanesOptions) {
    this.#o = options;
  }

  /** Names of the adapters this worker serves, in the order they were added. */
  names(): string[] {
    return [...this.#paths.keys()];
  }

  /** Adapters with a context now (requests for them start without making one). */
  residentNames(): string[] {
    return [...this.#resident.keys()];
  }

  /** Every resident lane (load and KV dumps read them). */
  lanes(): SequenceLane[] {
    return [...this.#resident.values()];
  }

  /** Calls `listener` when an adapter is added or removed. */
  onChange(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /**
   * Adds an adapter: its file must be a LoRA GGUF for this model's architecture, and llama.cpp must
   * apply it to this model (a context is made with it, which stays resident when there is room).
   * `flag` names where the adapter came from in errors (`--lora NAME=PATH`, `lora_path`).
   */
  async add(name: string, path: string, flag: string): Promise<void> {
    if (this.#paths.has(name)) {
      throw new ArmatureError("REQUEST_INVALID", `${flag}: an adapter named '${name}' is served already`, { param: "lora_name" });
    }
    await checkLoraFile(path, this.#o.model, flag);
    this.#paths.set(name, path);
    try {
      const lane = await this.#lane(name);
      if (lane.users === 0) await this.#evictOverflow();
    } catch (error) {
      this.#paths.delete(name);
      throw error;
    }
    for (const listener of this.#changeListeners) listener();
  }

  /** Removes an adapter: new requests for it are refused; its context goes once its requests end. */
  async remove(name: string): Promise<void> {
    if (!this.#paths.delete(name)) {
      throw new ArmatureError("MODEL_NOT_FOUND", `no adapter named '${name}' is served here`, { param: "lora_name" });
    }
    for (const listener of this.#changeListeners) listener();
    const lane = this.#resident.get(name);
    if (lane && lane.users === 0) await this.#dispose(lane);
  }

  /**
   * A lane of `name`, made resident (and marked in use until `release`): an adapter this worker
   * does not serve is `MODEL_NOT_FOUND`.
   */
  async hold(name: string, signal: AbortSignal): Promise<{ lane: SequenceLane; release: () => void }> {
    for (;;) {
      if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", "engine is closed", { retryable: true });
      if (!this.#paths.has(name)) {
        throw new ArmatureError("MODEL_NOT_FOUND", `no adapter named '${name}' is served by this worker`, { param: "model" });
      }
      const resident = this.#resident.get(name);
      if (resident || this.#making.has(name) || this.#roomFor() > 0 || (await this.#evictIdle())) {
        const lane = resident ?? (await this.#lane(name));
        // Another request may have disposed the new lane while this one waited for it to be made.
        if (this.#resident.get(name) !== lane) continue;
        lane.users++;
        // Most recently used last.
        this.#resident.delete(name);
        this.#resident.set(name, lane);
        let released = false;
        const release = (): void => {
          if (released) return;
          released = true;
          lane.users--;
          if (lane.users === 0) this.#laneIdle(lane);
        };
        return { lane, release };
      }
      await this.#untilIdle(signal);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const wake of this.#idleWaiters) wake();
    await Promise.allSettled(this.#making.values());
    for (const lane of [...this.#resident.values()]) {
      lane.slots.close();
      this.#resident.delete(lane.lora);
      await lane.context.dispose();
    }
  }

  #roomFor(): number {
    return this.#o.maxLoras - this.#resident.size - this.#making.size;
  }

  /** The resident lane of `name`, or a new one (made once however many requests ask at once). */
  async #lane(name: string): Promise<AdapterLane> {
    const resident = this.#resident.get(name);
    if (resident) return resident;
    const making = this.#making.get(name);
    if (making) return making;
    const made = this.#make(name);
    this.#making.set(name, made);
    try {
      return await made;
    } finally {
      this.#making.delete(name);
    }
  }

  async #make(name: string): Promise<AdapterLane> {
    const path = this.#paths.get(name) as string;
    let context: LlamaContext;
    try {
      context = await createContext(this.#o.model, { ...this.#o.context, lora: path });
    } catch (cause) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `llama.cpp cannot apply the LoRA adapter '${name}' (${path}) to this model: ${(cause as Error).message}`,
        { cause, param: "lora_path" },
      );
    }
    const sequences = Array.from({ length: context.totalSequences }, () => context.getSequence());
    const lane: AdapterLane = {
      lora: name,
      context,
      slots: new SequenceSlots(sequences),
      tracker: new KvBlockTracker(this.#o.blockSize, name),
      users: 0,
    };
    this.#resident.set(name, lane);
    return lane;
  }

  /** An idle adapter lane left: removed ones go, and resident ones over the bound. */
  #laneIdle(lane: AdapterLane): void {
    if (!this.#paths.has(lane.lora)) void this.#dispose(lane);
    for (const wake of this.#idleWaiters) wake();
  }

  /** Disposes the least recently used idle lane; false when every resident lane is in use. */
  async #evictIdle(): Promise<boolean> {
    for (const lane of this.#resident.values()) {
      if (lane.users === 0) {
        await this.#dispose(lane);
        return true;
      }
    }
    return false;
  }

  async #evictOverflow(): Promise<void> {
    while (this.#roomFor() < 0 && (await this.#evictIdle())) {
      // One idle lane at a time, least recently used first.
    }
  }

  async #dispose(lane: AdapterLane): Promise<void> {
    if (this.#resident.get(lane.lora) !== lane) return;
    this.#resident.delete(lane.lora);
    lane.slots.close();
    const events: KvEvent[] = [];
    for (const slot of lane.slots.all) events.push(...lane.tracker.update(slot.index, []));
    this.#o.emit(events);
    await lane.context.dispose();
  }

  #untilIdle(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const wake = (): void => {
        this.#idleWaiters.delete(wake);
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.#idleWaiters.delete(wake);
        reject(signal.reason);
      };
      this.#idleWaiters.add(wake);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
