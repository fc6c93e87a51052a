import type { Engine } from "../engines/index.js";
import {
  ArmatureError,
  cannotRank,
  type EmbedResponse,
  embedRequestSchema,
  encodeEmbedding,
  type ModelCard,
  type RankResponse,
  rankRequestSchema,
  subjects,
} from "../protocol/index.js";
import type { Registration, Runtime } from "../runtime/index.js";
import { callSignal } from "./deadline.js";

export interface PoolingServiceOptions {
  readonly runtime: Runtime;
  readonly workerId: string;
  readonly engine: Engine;
  readonly card: ModelCard;
  /** Whether the worker takes new requests (false once it drains). */
  readonly accepting: () => boolean;
  /** The worker's calls in flight, which its drain waits for; each call is one while it runs. */
  readonly inflight: Set<Promise<void>>;
}

/**
 * Serves the worker's pooled forward passes, the requests that generate nothing: `embed-request`s
 * at its embedding address (`subjects.embed`, one `embed-response` per input, in input order) and
 * `rank-request`s at its ranking address (`subjects.rank`, one `rank-response` per document, in
 * document order). A worker whose engine cannot serve one kind refuses every request of that kind,
 * naming the model and why, with `NOT_SUPPORTED`.
 */
export async function servePooling(options: PoolingServiceOptions): Promise<Registration> {
  const { requests } = options.runtime;
  const embedAt = subjects.embed(options.workerId);
  const rankAt = subjects.rank(options.workerId);
  const embedding = await requests.serve(embedAt, (payload, { signal }) => embedCall(options, embedAt, payload, signal));
  let ranking: Registration;
  try {
    ranking = await requests.serve(rankAt, (payload, { signal }) => rankCall(options, rankAt, payload, signal));
  } catch (error) {
    await embedding.close();
    throw error;
  }
  return { close: async () => void (await Promise.all([embedding.close(), ranking.close()])) };
}

async function* embedCall(
  o: PoolingServiceOptions,
  address: string,
  payload: unknown,
  callerSignal: AbortSignal,
): AsyncGenerator<EmbedResponse> {
  refuseWhenDraining(o);
  const request = o.runtime.invalidMessages.check("embed-request", embedRequestSchema, payload, address);
  const embed = o.engine.embed?.bind(o.engine);
  if (!embed) {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `model ${o.card.name} is served by the ${o.card.engine} engine, which computes no embeddings (it models timing and has no weights); serve a GGUF model with --engine llamacpp for POST /v1/embeddings`,
      { param: "model" },
    );
  }
  yield* tracked(o, callerSignal, request.timeoutMs, async function* (signal) {
    let index = 0;
    for await (const vector of embed(request, { signal })) {
      const promptTokens = request.inputs[index]?.length ?? 0;
      yield { type: "embed-response", index, embedding: encodeEmbedding(vector), promptTokens };
      index++;
    }
  });
}

async function* rankCall(
  o: PoolingServiceOptions,
  address: string,
  payload: unknown,
  callerSignal: AbortSignal,
): AsyncGenerator<RankResponse> {
  refuseWhenDraining(o);
  const request = o.runtime.invalidMessages.check("rank-request", rankRequestSchema, payload, address);
  const rank = o.engine.rank?.bind(o.engine);
  if (!rank) throw cannotRank(o.card.name, o.card.engine);
  yield* tracked(o, callerSignal, request.timeoutMs, async function* (signal) {
    let index = 0;
    for await (const pair of rank(request, { signal })) {
      yield { type: "rank-response", index, score: pair.score, promptTokens: pair.promptTokens };
      index++;
    }
  });
}

function refuseWhenDraining(o: PoolingServiceOptions): void {
  if (!o.accepting()) throw new ArmatureError("WORKER_DRAINING", `worker ${o.workerId} is shutting down`, { retryable: true });
}

/** Runs `work` as one of the worker's calls in flight (its drain waits for it), under the call's deadline. */
async function* tracked<T>(
  o: PoolingServiceOptions,
  callerSignal: AbortSignal,
  timeoutMs: number | undefined,
  work: (signal: AbortSignal) => AsyncGenerator<T>,
): AsyncGenerator<T> {
  const { signal, clear } = callSignal(o.runtime.clock, { signal: callerSignal }, timeoutMs);
  let done!: () => void;
  const inflight = new Promise<void>((resolve) => {
    done = resolve;
  });
  o.inflight.add(inflight);
  try {
    yield* work(signal);
  } finally {
    clear();
    o.inflight.delete(inflight);
    done();
  }
}
