import { ArmatureError, type EmbedRequest, isArmatureError, type RankRequest } from "../protocol/index.js";
import type { Router } from "../router/index.js";

/** Every input's embedding, in input order, as the wire carries it (base64 little-endian float32). */
export interface EmbeddingResult {
  /** The worker that embedded the last inputs (the only one, unless a worker failed midway). */
  readonly workerId: string;
  readonly embeddings: readonly string[];
}

/** Every document's score, in document order, and the tokens the model read for each pair. */
export interface RankingResult {
  /** The worker that scored the last documents (the only one, unless a worker failed midway). */
  readonly workerId: string;
  readonly scores: readonly number[];
  readonly promptTokens: number;
}

export interface PoolAllOptions {
  readonly signal: AbortSignal;
  /** Times the request may move to another worker when its worker fails (retryable errors). */
  readonly migrationLimit: number;
  /** Told each time the request moves, with the worker it left and how many items were answered. */
  readonly onMigrate?: ((from: string, answered: number) => void) | undefined;
}

/**
 * Embeds `request.inputs` through the router. When the worker fails with a retryable error (it
 * died, it is draining, it sent a malformed answer), the inputs it has not answered go to another
 * worker, up to `migrationLimit` times; embeddings are deterministic, so the answer is the same.
 */
export async function embedAll(router: Router, request: EmbedRequest, options: PoolAllOptions): Promise<EmbeddingResult> {
  const answers = await poolAll(
    request.inputs.length,
    (offset, excludeWorkerIds) =>
      router.embed({ ...request, inputs: request.inputs.slice(offset) }, { signal: options.signal, excludeWorkerIds }),
    options,
  );
  return { workerId: answers.workerId, embeddings: answers.items.map((r) => r.embedding) };
}

/** Scores `request.documents` through the router, moving what is left to another worker as `embedAll` does. */
export async function rankAll(router: Router, request: RankRequest, options: PoolAllOptions): Promise<RankingResult> {
  const answers = await poolAll(
    request.documents.length,
    (offset, excludeWorkerIds) =>
      router.rank(
        {
          ...request,
          queries: request.queries.length === 1 ? request.queries : request.queries.slice(offset),
          documents: request.documents.slice(offset),
        },
        { signal: options.signal, excludeWorkerIds },
      ),
    options,
  );
  return {
    workerId: answers.workerId,
    scores: answers.items.map((r) => r.score),
    promptTokens: answers.items.reduce((sum, r) => sum + r.promptTokens, 0),
  };
}

/**
 * The `total` answers of a pooled request, in order: each call is asked for the items from
 * `offset` on and must answer them in order; a retryable failure moves the rest to another worker.
 */
async function poolAll<Item extends { readonly index: number }>(
  total: number,
  call: (
    offset: number,
    excludeWorkerIds: readonly string[],
  ) => { readonly workerId: string; readonly stream: AsyncIterable<Item> },
  options: PoolAllOptions,
): Promise<{ workerId: string; items: Item[] }> {
  const items: Item[] = [];
  const failed: string[] = [];
  for (let moves = 0; ; moves++) {
    const offset = items.length;
    const { workerId, stream } = call(offset, failed);
    try {
      for await (const item of stream) {
        if (offset + item.index !== items.length) {
          throw new ArmatureError(
            "ENGINE_FAILED",
            `worker ${workerId} answered item ${offset + item.index} where ${items.length} was due`,
            { retryable: true },
          );
        }
        items.push(item);
      }
      if (items.length !== total) {
        throw new ArmatureError("ENGINE_FAILED", `worker ${workerId} ended after ${items.length} of ${total} items`, {
          retryable: true,
        });
      }
      return { workerId, items };
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      if (!isArmatureError(error) || !error.retryable || moves >= options.migrationLimit) throw error;
      failed.push(workerId);
      options.onMigrate?.(workerId, items.length);
    }
  }
}
