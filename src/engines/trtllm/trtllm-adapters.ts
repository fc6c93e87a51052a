import { ArmatureError } from "../../protocol/index.js";
import type { EngineAdapters } from "../engine.js";

/**
 * The LoRA adapters of a `trtllm-serve`, which loads an adapter when a request names it (its
 * `lora_request`: name, an integer id unique per adapter, and the adapter's folder on the engine's
 * host) rather than through a route of its own. The worker keeps the names and paths it was given
 * (`--lora NAME=PATH`, then `POST /v1/load_lora_adapter`); a path the engine cannot read fails the
 * first request for it with the engine's own message. Ids are never reused, so an adapter loaded
 * again under a known name is a new adapter to the engine's cache.
 */
export class TrtllmAdapters implements EngineAdapters {
  readonly #adapters = new Map<string, { readonly name: string; readonly id: number; readonly path: string }>();
  readonly #listeners = new Set<() => void>();
  #nextId = 1;

  constructor(initial: readonly { readonly name: string; readonly path: string }[]) {
    for (const { name, path } of initial) this.#adapters.set(name, { name, id: this.#nextId++, path });
  }

  names(): readonly string[] {
    return [...this.#adapters.keys()];
  }

  /** The adapter's `lora_request` fields. */
  adapter(name: string): { readonly name: string; readonly id: number; readonly path: string } | undefined {
    return this.#adapters.get(name);
  }

  async add(name: string, path: string, flag: string): Promise<void> {
    if (this.#adapters.has(name)) {
      throw new ArmatureError("REQUEST_INVALID", `${flag}: an adapter named '${name}' is served already`, { param: "lora_name" });
    }
    this.#adapters.set(name, { name, id: this.#nextId++, path });
    for (const listener of this.#listeners) listener();
  }

  async remove(name: string): Promise<void> {
    if (!this.#adapters.delete(name)) {
      throw new ArmatureError("MODEL_NOT_FOUND", `no adapter named '${name}' is served here`, { param: "lora_name" });
    }
    for (const listener of this.#listeners) listener();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
