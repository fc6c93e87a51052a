import type { Logger } from "../observability/index.js";
import { type AgentMetadata, type ModelCard, subjects, type WorkerLoad, workerLoadSchema } from "../protocol/index.js";
import type { Runtime, Unsubscribe } from "../runtime/index.js";
import type { WorkerView } from "./worker-view.js";

interface Tracked {
  readonly id: string;
  readonly card: ModelCard;
  inflight: number;
  published: WorkerLoad | undefined;
  readonly transferAgent: AgentMetadata | undefined;
}

/**
 * The live workers of every model, from discovery, with their published load and this router's
 * own in-flight counts.
 */
export class WorkerSet {
  readonly #workers = new Map<string, Tracked>();
  readonly #stops: Unsubscribe[] = [];
  readonly #listeners = new Set<() => void>();
  /** Models kept while they have no worker (a pool scaled to zero), with the last card seen. */
  readonly #kept = new Map<string, ModelCard | undefined>();

  constructor(runtime: Runtime, logger: Logger) {
    const log = logger.child({ component: "worker-set" });
    this.#stops.push(
      runtime.discovery.watch((event) => {
        if (event.type === "instance-added") {
          if (this.#kept.has(event.instance.card.name)) this.#kept.set(event.instance.card.name, event.instance.card);
          const previous = this.#workers.get(event.instance.id);
          this.#workers.set(event.instance.id, {
            id: event.instance.id,
            card: event.instance.card,
            inflight: previous?.inflight ?? 0,
            published: previous?.published,
            transferAgent: event.instance.transferAgent,
          });
          log.info({ workerId: event.instance.id, model: event.instance.model }, "worker joined");
        } else if (this.#workers.delete(event.instanceId)) {
          log.info({ workerId: event.instanceId }, "worker left");
        }
        for (const listener of this.#listeners) listener();
      }),
      runtime.events.subscribe(subjects.allLoad, (payload, subject) => {
        const load = runtime.invalidMessages.accept("worker-load", workerLoadSchema, payload, subject);
        if (!load || subject !== subjects.load(load.workerId)) return;
        const worker = this.#workers.get(load.workerId);
        if (!worker) return;
        const before = worker.published?.activeKvBlocks ?? 0;
        worker.published = load;
        // Fewer blocks in use may end a worker's busy spell: requests parked for one try again.
        if (load.activeKvBlocks < before) for (const listener of this.#listeners) listener();
      }),
    );
  }

  /** Workers serving `model`, optionally restricted to a role. */
  forModel(model: string): WorkerView[] {
    return [...this.#workers.values()].filter((w) => w.card.name === model);
  }

  get(id: string): WorkerView | undefined {
    return this.#workers.get(id);
  }

  all(): WorkerView[] {
    return [...this.#workers.values()];
  }

  /** Distinct model cards, one per served name (the first registered); a kept model with none now, by its last card. */
  models(): ModelCard[] {
    const byName = new Map<string, ModelCard>();
    for (const w of this.#workers.values()) if (!byName.has(w.card.name)) byName.set(w.card.name, w.card);
    for (const [name, card] of this.#kept) if (card && !byName.has(name)) byName.set(name, card);
    return [...byName.values()];
  }

  /**
   * Keeps `model` served while it has no worker (its planner may scale it to zero): it stays in
   * `models()` with the last card a worker of it registered, and the router holds its requests
   * until a worker joins instead of refusing them.
   */
  keep(model: string): void {
    if (this.#kept.has(model)) return;
    this.#kept.set(model, this.forModel(model)[0]?.card);
  }

  /** Whether `model` is kept while it has no worker (`keep`), and some worker of it has registered. */
  isKept(model: string): boolean {
    return this.#kept.get(model) !== undefined;
  }

  /**
   * LoRA adapters some worker serves now, each with the model it adapts (the first worker that
   * lists it decides; a name that is also a model's stays the model's).
   */
  adapters(): Map<string, string> {
    const parents = new Map<string, string>();
    const models = new Set(this.models().map((c) => c.name));
    for (const w of this.#workers.values()) {
      for (const lora of w.card.loras ?? []) if (!models.has(lora) && !parents.has(lora)) parents.set(lora, w.card.name);
    }
    return parents;
  }

  /** The model that LoRA adapter `lora` adapts, when some worker serves it. */
  adapterParent(lora: string): string | undefined {
    return this.adapters().get(lora);
  }

  /** Calls `listener` whenever a worker joins or leaves, or publishes fewer KV blocks in use than before. */
  onChange(listener: () => void): Unsubscribe {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  adjustInflight(id: string, delta: number): void {
    const worker = this.#workers.get(id);
    if (worker) worker.inflight = Math.max(0, worker.inflight + delta);
  }

  close(): void {
    for (const stop of this.#stops) stop();
    this.#listeners.clear();
  }
}
