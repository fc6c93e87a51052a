import type { Engine } from "../engines/index.js";
import {
  ArmatureError,
  type EmbedResponse,
  embedRequestSchema,
  encodeEmbedding,
  type ModelCard,
  subjects,
} from "../protocol/index.js";
import type { Registration, Runtime } from "../runtime/index.js";
import { callSignal } from "./deadline.js";

export interface EmbedServiceOptions {
  readonly runtime: Runtime;
  readonly workerId: string;
  readonly engine: Engine;
  readonly card: ModelCard;
  /** Whether the worker takes new requests (false once it drains). */
  readonly accepting: () => boolean;
  /** The worker's calls in flight, which its drain waits for; each embedding call is one while it runs. */
  readonly inflight: Set<Promise<void>>;
}

/**
 * Serves `embed-request`s at the worker's embedding address (`subjects.embed`): one `embed-response`
 * per input, in input order. A worker whose engine computes no embeddings (the mocker) refuses every
 * request, naming the model and the engine, with `NOT_SUPPORTED`.
 */
export function serveEmbeddings(options: EmbedServiceOptions): Promise<Registration> {
  const address = subjects.embed(options.workerId);
  return options.runtime.requests.serve(address, (payload, { signal }) => embedCall(options, address, payload, signal));
}

async function* embedCall(
  o: EmbedServiceOptions,
  address: string,
  payload: unknown,
  callerSignal: AbortSignal,
): AsyncGenerator<EmbedResponse> {
  if (!o.accepting()) throw new ArmatureError("WORKER_DRAINING", `worker ${o.workerId} is shutting down`, { retryable: true });
  const request = o.runtime.invalidMessages.check("embed-request", embedRequestSchema, payload, address);
  if (!o.engine.embed) {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `model ${o.card.name} is served by the ${o.card.engine} engine, which computes no embeddings (it models timing and has no weights); serve a GGUF model with --engine llamacpp for POST /v1/embeddings`,
      { param: "model" },
    );
  }
  const { signal, clear } = callSignal(o.runtime.clock, callerSignal, request.timeoutMs);
  let done!: () => void;
  const tracked = new Promise<void>((resolve) => {
    done = resolve;
  });
  o.inflight.add(tracked);
  try {
    let index = 0;
    for await (const vector of o.engine.embed(request, { signal })) {
      const promptTokens = request.inputs[index]?.length ?? 0;
      yield { type: "embed-response", index, embedding: encodeEmbedding(vector), promptTokens };
      index++;
    }
  } finally {
    clear();
    o.inflight.delete(tracked);
    done();
  }
}
