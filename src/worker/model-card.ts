import type { EngineInfo } from "../engines/index.js";
import type { ModelCard, WorkerRole } from "../protocol/index.js";

/** The card a worker registers for its engine. */
export function modelCardFor(engine: EngineInfo, name: string, role: WorkerRole): ModelCard {
  return {
    name,
    role,
    engine: engine.kind,
    blockSize: engine.blockSize,
    totalKvBlocks: engine.totalKvBlocks,
    maxBatchedTokens: engine.maxBatchedTokens,
    maxSequences: engine.maxSequences,
    contextLength: engine.contextLength,
    tokenizer: engine.tokenizer,
    chatTemplate: engine.chatTemplate,
    eosTokenIds: engine.eosTokenIds,
    bosToken: engine.bosToken,
    eosToken: engine.eosToken,
    publishesKvEvents: engine.publishesKvEvents,
  };
}
