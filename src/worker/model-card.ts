import type { EngineInfo } from "../engines/index.js";
import type { ModelCard, WorkerRole } from "../protocol/index.js";

/** The card a worker registers for its engine. */
export function modelCardFor(engine: EngineInfo, name: string, role: WorkerRole): ModelCard {
  const { kind, ...rest } = engine;
  return { ...rest, name, role, engine: kind };
}
