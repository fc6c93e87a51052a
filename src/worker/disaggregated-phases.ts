import type { Engine } from "../engines/index.js";
import type { Logger } from "../observability/index.js";
import {
  ArmatureError,
  type GenerateRequest,
  type GenerateResponse,
  isArmatureError,
  type KvHandoff,
} from "../protocol/index.js";
import type { TransferAgent } from "../transfer/index.js";
import type { KvExports } from "./kv-exports.js";
import { type PulledKv, pullKv } from "./kv-import.js";

/** Prefill phase: compute the KV and first token, export the KV, answer with where it waits. */
export async function* servePrefill(
  engine: Engine,
  exports: KvExports,
  workerId: string,
  request: GenerateRequest,
  signal: AbortSignal,
): AsyncGenerator<GenerateResponse> {
  if (!engine.prefill) {
    throw new ArmatureError("NOT_SUPPORTED", `the ${engine.info.kind} engine cannot run prefill-only requests`);
  }
  // Refused (retryably) when the exports are full: the router then prefills on the decode worker.
  const { id, path } = await exports.newExport(request.tokenIds.length);
  let handoff: KvHandoff | undefined;
  let cachedTokens = 0;
  try {
    // The decode worker is said to hold the prompt's first tokens: the export may leave them out.
    const decodeHeldTokens = request.disaggregation?.phase === "prefill" ? request.disaggregation.decodeHeldTokens : undefined;
    const result = await engine.prefill(request, { signal, exportPath: path, decodeHeldTokens });
    cachedTokens = result.cachedTokens;
    // An engine that prefills while its peer decodes (SGLang) knows no first token yet.
    const started = result.firstToken !== undefined || result.kv?.format === "engine-transfer-params";
    if (result.kv && started) handoff = await exports.publish(id, workerId, request, result);
  } finally {
    if (!handoff) await exports.free(id, "failed", path);
  }
  yield {
    type: "request-end",
    finishReason: handoff ? "length" : "stop",
    promptTokens: request.tokenIds.length,
    completionTokens: handoff ? 1 : 0,
    cachedTokens,
    kvHandoff: handoff,
  };
}

export interface DecodeContext {
  readonly engine: Engine;
  readonly agent: TransferAgent;
  readonly log: Logger;
  /** How long to wait for the KV bytes before prefilling here. */
  readonly transferTimeoutMs: number;
}

/**
 * Decode phase: pull the KV, then generate from it. When the bytes do not come (the prefill
 * worker died, the transfer timed out or was corrupted beyond retries) or the engine refuses
 * them, the prompt is prefilled here instead; the request is never lost.
 */
export async function* serveDecode(
  context: DecodeContext,
  request: GenerateRequest,
  handoff: KvHandoff,
  signal: AbortSignal,
): AsyncGenerator<GenerateResponse> {
  const plain: GenerateRequest = { ...request, disaggregation: undefined };
  let pulled: PulledKv | undefined;
  try {
    pulled = await pullKv(context.agent, handoff, signal, context.transferTimeoutMs);
  } catch (error) {
    if (signal.aborted) throw error;
    context.log.warn(
      { err: error, handoffId: handoff.id, from: handoff.prefillWorkerId },
      "KV transfer failed; prefilling locally",
    );
  }
  try {
    if (pulled) {
      const refusal = yield* generateImported(context.engine, plain, pulled, handoff, signal);
      if (!refusal) return;
      // E.g. the decode worker no longer holds the prompt's first blocks the prefill worker left out.
      context.log.warn({ handoffId: handoff.id, err: refusal }, "the engine refused the transferred KV; prefilling locally");
    }
    for await (const response of context.engine.generate(plain, { signal })) {
      yield response.type === "request-end" ? { ...response, prefilledLocally: true } : response;
    }
  } finally {
    await pulled?.release();
  }
}

/** Generates from imported KV; the engine's refusal (nothing yielded) when it refused the import. */
async function* generateImported(
  engine: Engine,
  request: GenerateRequest,
  pulled: PulledKv,
  handoff: KvHandoff,
  signal: AbortSignal,
): AsyncGenerator<GenerateResponse, ArmatureError | undefined> {
  let started = false;
  try {
    for await (const response of engine.generate(request, { signal, importedKv: pulled.importedKv })) {
      started = true;
      // The prompt's cache hits happened on the prefill worker.
      yield response.type === "request-end"
        ? { ...response, cachedTokens: handoff.cachedTokens, kvTransfer: pulled.transfer }
        : response;
    }
    return undefined;
  } catch (error) {
    if (started || signal.aborted || !isArmatureError(error) || error.code !== "TRANSFER_FAILED") throw error;
    return error;
  }
}
