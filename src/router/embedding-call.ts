import {
  ArmatureError,
  type EmbedRequest,
  type EmbedResponse,
  embedResponseSchema,
  subjects,
  type WorkerRole,
} from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import { leastLoadedPolicy } from "./basic-policies.js";
import type { WorkerSet } from "./worker-set.js";

/**
 * Roles that embed: an embedding is a prompt's forward pass and nothing after it, the work a
 * prefill worker is sized for; decode workers are left to decode.
 */
export const EMBEDDING_ROLES: readonly WorkerRole[] = ["aggregated", "prefill"];

/** An embedding call on its way: the worker chosen and its responses, one per input. */
export interface EmbeddingCall {
  readonly workerId: string;
  readonly stream: AsyncIterable<EmbedResponse>;
}

const policy = leastLoadedPolicy();

/**
 * Sends `request` to the least-loaded aggregated or prefill worker of its model (by this router's
 * calls in flight, then published load), skipping `excludeWorkerIds`. No KV routing (an embedding
 * reuses no cache) and no admission queue (the engine embeds in its own context, outside the KV
 * capacity the busy thresholds measure). Throws `ROUTER_NO_WORKER` when none is left; each response
 * is checked against its schema (a malformed one fails the call with a retryable `ENGINE_FAILED`).
 * The call counts among the worker's requests in flight while it runs; `onRelease` hears when it
 * stops counting (requests parked because the worker was busy must try again then).
 */
export function callEmbedding(
  runtime: Runtime,
  workers: WorkerSet,
  request: EmbedRequest,
  options: {
    readonly signal: AbortSignal;
    readonly excludeWorkerIds?: readonly string[] | undefined;
    readonly onRelease?: (() => void) | undefined;
  },
): EmbeddingCall {
  const excluded = new Set(options.excludeWorkerIds ?? []);
  const candidates = workers.forModel(request.model).filter((w) => EMBEDDING_ROLES.includes(w.card.role) && !excluded.has(w.id));
  if (candidates.length === 0) {
    throw new ArmatureError(
      "ROUTER_NO_WORKER",
      `no aggregated or prefill worker serves model ${request.model} right now (embeddings are not sent to decode workers)`,
      { retryable: true },
    );
  }
  const workerId = policy.select(candidates, { model: request.model, tokenIds: [] }).id;
  workers.adjustInflight(workerId, 1);
  const source = runtime.requests.call(subjects.embed(workerId), request, { signal: options.signal });
  const release = (): void => {
    workers.adjustInflight(workerId, -1);
    options.onRelease?.();
  };
  return { workerId, stream: checked(source, workerId, runtime, release) };
}

/** The worker's responses, each checked, with `release` run once when the stream ends or is left. */
async function* checked(
  source: AsyncIterable<unknown>,
  workerId: string,
  runtime: Runtime,
  release: () => void,
): AsyncGenerator<EmbedResponse> {
  try {
    for await (const item of source) {
      const response = runtime.invalidMessages.accept("embed-response", embedResponseSchema, item, subjects.embed(workerId));
      if (!response) {
        throw new ArmatureError("ENGINE_FAILED", `worker ${workerId} sent a malformed embedding`, { retryable: true });
      }
      yield response;
    }
  } finally {
    release();
  }
}
