import { ArmatureError, type EmbedRequest, isArmatureError } from "../protocol/index.js";
import type { Router } from "../router/index.js";

/** Every input's embedding, in input order, as the wire carries it (base64 little-endian float32). */
export interface EmbeddingResult {
  /** The worker that embedded the last inputs (the only one, unless a worker failed midway). */
  readonly workerId: string;
  readonly embeddings: readonly string[];
}

export interface EmbedAllOptions {
  readonly signal: AbortSignal;
  /** Times the request may move to another worker when its worker fails (retryable errors). */
  readonly migrationLimit: number;
  readonly onMigrate?: ((from: string, embedded: number) => void) | undefined;
}

/**
 * Embeds `request.inputs` through the router. When the worker fails with a retryable error (it
 * died, it is draining, it sent a malformed answer), the inputs it has not answered go to another
 * worker, up to `migrationLimit` times; embeddings are deterministic, so the answer is the same.
 */
export async function embedAll(router: Router, request: EmbedRequest, options: EmbedAllOptions): Promise<EmbeddingResult> {
  const embeddings: string[] = [];
  const failed: string[] = [];
  for (let moves = 0; ; moves++) {
    const offset = embeddings.length;
    const call = router.embed(
      { ...request, inputs: request.inputs.slice(offset) },
      { signal: options.signal, excludeWorkerIds: failed },
    );
    try {
      for await (const response of call.stream) {
        if (offset + response.index !== embeddings.length) {
          throw new ArmatureError(
            "ENGINE_FAILED",
            `worker ${call.workerId} answered input ${offset + response.index} where ${embeddings.length} was due`,
            { retryable: true },
          );
        }
        embeddings.push(response.embedding);
      }
      if (embeddings.length !== request.inputs.length) {
        throw new ArmatureError(
          "ENGINE_FAILED",
          `worker ${call.workerId} ended after ${embeddings.length} of ${request.inputs.length} embeddings`,
          { retryable: true },
        );
      }
      return { workerId: call.workerId, embeddings };
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      if (!isArmatureError(error) || !error.retryable || moves >= options.migrationLimit) throw error;
      failed.push(call.workerId);
      options.onMigrate?.(call.workerId, embeddings.length);
    }
  }
}
