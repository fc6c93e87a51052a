import { migratingStream, type RunningRequestListener } from "../frontend/index.js";
import { type GenerateRequest, isArmatureError, type RequestEnd } from "../protocol/index.js";
import type { Router } from "../router/index.js";
import type { Clock } from "../runtime/index.js";
import type { ReplayRecorder } from "./replay-recorder.js";

/** Times a request may move to another worker when its worker fails or drains under it (`armature serve`'s default). */
const MIGRATION_LIMIT = 3;

/** One finished request, as a planner's traffic window reads it. */
export interface FinishedReplayRequest {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  readonly ttftMs?: number | undefined;
  readonly itlMs?: number | undefined;
}

/**
 * Sends one request as the frontend does: routed by the router (admission queue, busy thresholds,
 * disaggregation), streamed through request migration, and timed from `clock.now()` at the call.
 * A refusal (every worker busy and the queue full, or the request's deadline out of reach) counts
 * as rejected; any other failure (the deadline passing on a worker among them) as not completed.
 */
export async function sendRequest(
  router: Router,
  request: GenerateRequest,
  clock: Clock,
  recorder: ReplayRecorder,
  hooks: {
    onToken?: () => void;
    onFinished?: ((r: FinishedReplayRequest) => void) | undefined;
    /** Follows the request while it runs (a planner's live latencies), on `clock`. */
    onStarted?: ((nowMs: number) => RunningRequestListener) | undefined;
  } = {},
): Promise<void> {
  const arrival = clock.now();
  const running = hooks.onStarted?.(arrival);
  try {
    await follow(router, request, clock, recorder, hooks, arrival, running);
  } finally {
    running?.end(clock.now());
  }
}

async function follow(
  router: Router,
  request: GenerateRequest,
  clock: Clock,
  recorder: ReplayRecorder,
  hooks: { onToken?: () => void; onFinished?: ((r: FinishedReplayRequest) => void) | undefined },
  arrival: number,
  running: RunningRequestListener | undefined,
): Promise<void> {
  // A fresh signal per request: engines and planes add a listener to it, and replays make millions of calls.
  const signal = new AbortController().signal;
  let call: Awaited<ReturnType<Router["route"]>>;
  try {
    call = await router.route(request, { signal });
  } catch (error) {
    if (isArmatureError(error) && (error.code === "ROUTER_OVERLOADED" || error.code === "ROUTER_DEADLINE_UNREACHABLE"))
      recorder.reject(request.priority);
    return;
  }
  running?.routed(call.workerId, call.prefillWorkerId);
  let first = -1;
  let last = -1;
  let count = 0;
  const onEnd = (item: RequestEnd): void => {
    if (item.finishReason !== "length" && item.finishReason !== "stop") return;
    const itlMs = count > 1 ? (last - first) / (count - 1) : undefined;
    recorder.complete({
      requestId: request.requestId,
      priority: request.priority,
      ttftMs: first - arrival,
      itlMs,
      promptTokens: item.promptTokens,
      cachedTokens: item.cachedTokens,
      hostCachedTokens: item.hostCachedTokens,
      outputTokens: item.completionTokens,
    });
    hooks.onFinished?.({
      inputTokens: item.promptTokens,
      outputTokens: item.completionTokens,
      cachedTokens: item.cachedTokens,
      ttftMs: first < 0 ? undefined : first - arrival,
      itlMs,
    });
  };
  // Refused by every worker it reached (longer than their context or cache): not completed.
  await new Promise<void>((resolve) => {
    migratingStream(
      router,
      request,
      call,
      { signal, limit: MIGRATION_LIMIT },
      {
        push: (item) => {
          if (item.type === "request-end") {
            onEnd(item);
            return;
          }
          if (first < 0) first = clock.now();
          last = clock.now();
          count += item.tokenIds.length;
          running?.tokens(last, item.tokenIds.length);
          hooks.onToken?.();
        },
        end: resolve,
        fail: () => resolve(),
      },
    );
  });
}
