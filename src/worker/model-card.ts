import type { Engine } from "../engines/index.js";
import type { ModelCard, WorkerRole } from "../protocol/index.js";

/** The card a worker registers for its engine, with the LoRA adapters it serves now. */
export function modelCardFor(engine: Pick<Engine, "info" | "adapters">, name: string, role: WorkerRole): ModelCard {
  const { kind, ...rest } = engine.info;
  const loras = engine.adapters?.names() ?? [];
  return { ...rest, name, role, engine: kind, ...(loras.length > 0 ? { loras: [...loras] } : {}) };
}
