import type { Engine } from "../engines/index.js";
import type { ModelCard, ModelKind, WorkerRole } from "../protocol/index.js";

/** The card a worker registers for its engine: what it serves (embeddings where the engine computes them), its LoRA adapters now. */
export function modelCardFor(engine: Pick<Engine, "info" | "adapters" | "embed">, name: string, role: WorkerRole): ModelCard {
  const { kind, ...rest } = engine.info;
  const loras = engine.adapters?.names() ?? [];
  const kinds: ModelKind[] = engine.embed ? ["chat", "embeddings"] : ["chat"];
  return { ...rest, name, role, engine: kind, kinds, ...(loras.length > 0 ? { loras: [...loras] } : {}) };
}
