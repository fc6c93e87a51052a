import type { Logger } from "../observability/index.js";
import { ArmatureError, type GenerateRequest, type GenerateResponse } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import type { RoutingPolicy } from "./policy.js";
import { WorkerSet } from "./worker-set.js";

export interface RouterOptions {
  readonly runtime: Runtime;
  readonly policy: RoutingPolicy;
  readonly logger: Logger;
}

/** A routed call: which worker serves it and the stream of its responses. */
export interface RoutedCall {
  readonly workerId: string;
  /** Prompt blocks the worker already caches, when the policy knows (the KV policy does). */
  readonly overlapBlocks: number | undefined;
  readonly stream: AsyncIterable<GenerateResponse>;
}

/**
 * Chooses a worker for each request (or honours a pinned one) and calls it on the request plane.
 * Keeps its own in-flight count per worker until the call's stream ends.
 */
export class Router {
  readonly workers: WorkerSet;
  readonly #runtime: Runtime;
  readonly #policy: RoutingPolicy;

  constructor(options: RouterOptions) {
    this.#runtime = options.runtime;
    this.#policy = options.policy;
    this.workers = new WorkerSet(options.runtime, options.logger);
  }

  get policyName(): string {
    return this.#policy.name;
  }

  /**
   * Picks a worker and starts the call. Throws `ROUTER_NO_WORKER` when no worker serves the model
   * and `ROUTER_WORKER_NOT_FOUND` when the pinned worker is not one of them.
   */
  route(request: GenerateRequest, options: { signal: AbortSignal; pinnedWorkerId?: string | undefined }): RoutedCall {
    const candidates = this.workers.forModel(request.model);
    if (candidates.length === 0) {
      throw new ArmatureError("ROUTER_NO_WORKER", `no worker serves model ${request.model} right now`, { retryable: true });
    }
    let chosen = candidates[0];
    const routeRequest = { model: request.model, tokenIds: request.tokenIds };
    if (options.pinnedWorkerId !== undefined) {
      chosen = candidates.find((w) => w.id === options.pinnedWorkerId);
      if (!chosen) {
        throw new ArmatureError(
          "ROUTER_WORKER_NOT_FOUND",
          `worker ${options.pinnedWorkerId} (nvext.backend_instance_id) does not serve model ${request.model}; GET /health lists the instances`,
          { param: "nvext.backend_instance_id" },
        );
      }
    } else {
      chosen = this.#policy.select(candidates, routeRequest);
    }
    const workerId = chosen.id;
    this.workers.adjustInflight(workerId, 1);
    this.#policy.onRouted?.(workerId, routeRequest);
    const source = this.#runtime.requests.call(workerId, request, { signal: options.signal });
    const release = (): void => {
      this.workers.adjustInflight(workerId, -1);
      this.#policy.onFinished?.(workerId, routeRequest);
    };
    const firstToken = (): void => this.#policy.onFirstToken?.(workerId, routeRequest);
    return {
      workerId,
      overlapBlocks: this.#policy.overlapBlocks?.(workerId, routeRequest),
      stream: tracked(source as AsyncIterable<GenerateResponse>, release, firstToken),
    };
  }

  close(): void {
    this.workers.close();
  }
}

/** Wraps a stream so `release` runs exactly once when it ends, fails or is abandoned, and `firstToken` on its first token. */
function tracked(
  source: AsyncIterable<GenerateResponse>,
  release: () => void,
  firstToken: () => void,
): AsyncIterable<GenerateResponse> {
  let released = false;
  let sawToken = false;
  const releaseOnce = (): void => {
    if (!released) {
      released = true;
      release();
    }
  };
  return {
    [Symbol.asyncIterator](): AsyncIterator<GenerateResponse> {
      const inner = source[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const result = await inner.next();
            if (result.done) releaseOnce();
            else if (!sawToken && result.value.type === "token-delta") {
              sawToken = true;
              firstToken();
            }
            return result;
          } catch (error) {
            releaseOnce();
            throw error;
          }
        },
        async return(value?: unknown) {
          releaseOnce();
          await inner.return?.();
          return { done: true, value: value as GenerateResponse };
        },
      };
    },
  };
}
