import {
  ArmatureError,
  type EmbedRequest,
  type EmbedResponse,
  embedResponseSchema,
  type RankRequest,
  type RankResponse,
  rankResponseSchema,
  type Schema,
  subjects,
  type WorkerRole,
} from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import { leastLoadedPolicy } from "./basic-policies.js";
import type { WorkerSet } from "./worker-set.js";

/**
 * Roles that embed and rank: a pooled forward pass is a prompt's and nothing after it, the work a
 * prefill worker is sized for; decode workers are left to decode.
 */
export const EMBEDDING_ROLES: readonly WorkerRole[] = ["aggregated", "prefill"];

/** A pooling call on its way: the worker chosen and its responses, one per input or document. */
export interface PoolingCall<Response> {
  readonly workerId: string;
  readonly stream: AsyncIterable<Response>;
}

export type EmbeddingCall = PoolingCall<EmbedResponse>;
export type RankingCall = PoolingCall<RankResponse>;

export interface PoolingCallOptions {
  readonly signal: AbortSignal;
  readonly excludeWorkerIds?: readonly string[] | undefined;
  readonly onRelease?: (() => void) | undefined;
}

/** The two kinds of pooled request: where each goes on a worker, and how its answers are checked. */
const KINDS = {
  embed: { address: subjects.embed, schema: embedResponseSchema, what: "embedding", message: "embed-response" },
  rank: { address: subjects.rank, schema: rankResponseSchema, what: "score", message: "rank-response" },
} as const;

const policy = leastLoadedPolicy();

/** Sends an embedding request (see `callPooling`). */
export function callEmbedding(
  runtime: Runtime,
  workers: WorkerSet,
  request: EmbedRequest,
  options: PoolingCallOptions,
): EmbeddingCall {
  return callPooling(runtime, workers, request, KINDS.embed, options);
}

/** Sends a ranking request (see `callPooling`). */
export function callRanking(
  runtime: Runtime,
  workers: WorkerSet,
  request: RankRequest,
  options: PoolingCallOptions,
): RankingCall {
  return callPooling(runtime, workers, request, KINDS.rank, options);
}

/**
 * Sends `request` to the least-loaded aggregated or prefill worker of its model (by this router's
 * calls in flight, then published load), skipping `excludeWorkerIds`. No KV routing (a pooled pass
 * reuses no cache) and no admission queue (the engine runs it in its own context, outside the KV
 * capacity the busy thresholds measure). Throws `ROUTER_NO_WORKER` when none is left; each response
 * is checked against its schema (a malformed one fails the call with a retryable `ENGINE_FAILED`).
 * The call counts among the worker's requests in flight while it runs; `onRelease` hears when it
 * stops counting (requests parked because the worker was busy must try again then).
 */
function callPooling<Response>(
  runtime: Runtime,
  workers: WorkerSet,
  request: { readonly model: string },
  kind: {
    readonly address: (workerId: string) => string;
    readonly schema: Schema<Response>;
    readonly what: string;
    readonly message: string;
  },
  options: PoolingCallOptions,
): PoolingCall<Response> {
  const excluded = new Set(options.excludeWorkerIds ?? []);
  const candidates = workers.forModel(request.model).filter((w) => EMBEDDING_ROLES.includes(w.card.role) && !excluded.has(w.id));
  if (candidates.length === 0) {
    throw new ArmatureError(
      "ROUTER_NO_WORKER",
      `no aggregated or prefill worker serves model ${request.model} right now (embeddings and scores are not sent to decode workers)`,
      { retryable: true },
    );
  }
  const workerId = policy.select(candidates, { model: request.model, tokenIds: [] }).id;
  workers.adjustInflight(workerId, 1);
  const address = kind.address(workerId);
  const source = runtime.requests.call(address, request, { signal: options.signal });
  const release = (): void => {
    workers.adjustInflight(workerId, -1);
    options.onRelease?.();
  };
  return { workerId, stream: checked(source, workerId, address, runtime, kind, release) };
}

/** The worker's responses, each checked, with `release` run once when the stream ends or is left. */
async function* checked<Response>(
  source: AsyncIterable<unknown>,
  workerId: string,
  address: string,
  runtime: Runtime,
  kind: { readonly schema: Schema<Response>; readonly what: string; readonly message: string },
  release: () => void,
): AsyncGenerator<Response> {
  try {
    for await (const item of source) {
      const response = runtime.invalidMessages.accept(kind.message, kind.schema, item, address);
      if (!response) {
        throw new ArmatureError("ENGINE_FAILED", `worker ${workerId} sent a malformed ${kind.what}`, { retryable: true });
      }
      yield response;
    }
  } finally {
    release();
  }
}
