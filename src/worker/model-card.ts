import type { Engine } from "../engines/index.js";
import type { ModelCard, ModelKind, WorkerRole } from "../protocol/index.js";

/**
 * The card a worker registers for its engine: what it serves (embeddings where the engine computes
 * them, ranking where the model has a ranking head), its LoRA adapters now.
 */
export function modelCardFor(
  engine: Pick<Engine, "info" | "adapters" | "embed" | "rank">,
  name: string,
  role: WorkerRole,
): ModelCard {
  const { kind, ...rest } = engine.info;
  const loras = engine.adapters?.names() ?? [];
  const kinds: ModelKind[] = [
    "chat",
    ...(engine.embed ? ["embeddings" as const] : []),
    ...(engine.rank ? ["rerank" as const] : []),
  ];
  return { ...rest, name, role, engine: kind, kinds, ...(loras.length > 0 ? { loras: [...loras] } : {}) };
}
