import type { Logger } from "../observability/index.js";
import type { Router } from "../router/index.js";
import { callLoraAdmin } from "./lora-admin-call.js";

/**
 * The LoRA adapters loaded at run time through this frontend (`POST /v1/load_lora_adapter`), by
 * model, loaded again on each worker of the model that registers without them: one the planner
 * added, one back after its pool drained to zero, one restarted. A worker is asked once per adapter
 * while it stays registered; a refusal is logged with the worker's reason. The record lives in this
 * process: a frontend started afresh knows only the adapters workers still serve.
 */
export class RuntimeAdapters {
  readonly #router: Router;
  readonly #log: Logger;
  /** model → adapter name → path on the workers' hosts. */
  readonly #loaded = new Map<string, Map<string, string>>();
  /** `worker\0adapter` pairs asked already. */
  readonly #asked = new Set<string>();
  readonly #stop: () => void;

  constructor(router: Router, log: Logger) {
    this.#router = router;
    this.#log = log;
    this.#stop = router.workers.onChange(() => this.#follow());
  }

  /** An adapter every worker of `model` now serves from `path`. */
  loaded(model: string, name: string, path: string): void {
    let adapters = this.#loaded.get(model);
    if (!adapters) {
      adapters = new Map();
      this.#loaded.set(model, adapters);
    }
    adapters.set(name, path);
    for (const worker of this.#router.workers.forModel(model)) this.#asked.add(`${worker.id}\0${name}`);
  }

  /** An adapter dropped from `model`'s workers. */
  unloaded(model: string, name: string): void {
    this.#loaded.get(model)?.delete(name);
    for (const key of [...this.#asked]) if (key.endsWith(`\0${name}`)) this.#asked.delete(key);
  }

  close(): void {
    this.#stop();
  }

  #follow(): void {
    const present = new Set<string>();
    for (const [model, adapters] of this.#loaded) {
      for (const worker of this.#router.workers.forModel(model)) {
        present.add(worker.id);
        if (worker.card.role === "prefill") continue;
        for (const [name, path] of adapters) {
          const key = `${worker.id}\0${name}`;
          if (worker.card.loras?.includes(name) || this.#asked.has(key)) continue;
          this.#asked.add(key);
          callLoraAdmin(this.#router, worker, { type: "lora-load", name, path }).then(
            () => this.#log.info({ workerId: worker.id, lora: name }, "run-time LoRA adapter loaded on a worker that joined"),
            (error: Error) =>
              this.#log.warn(
                { workerId: worker.id, lora: name, path, err: error },
                "a worker that joined could not load a run-time LoRA adapter",
              ),
          );
        }
      }
    }
    // A worker that left and comes back under the same id is asked again.
    for (const key of [...this.#asked]) if (!present.has(key.split("\0")[0] as string)) this.#asked.delete(key);
  }
}
