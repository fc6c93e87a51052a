import { ArmatureError, ROUTER_SERVICE_SUBJECT, type RouteAnswer, type RouteQuery } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import type { RouteRequest, WorkerView } from "./worker-view.js";

/** Asks an `armature router` process to choose among candidates. */
export type RemoteSelector = (
  candidates: readonly WorkerView[],
  request: RouteRequest,
  signal: AbortSignal,
) => Promise<{ workerId: string; overlapBlocks: number | undefined }>;

/** A selector that queries the router service on the request plane, giving up after `timeoutMs`. */
export function remoteSelector(runtime: Runtime, timeoutMs = 2000): RemoteSelector {
  return async (candidates, request, signal) => {
    const query: RouteQuery = {
      type: "route-query",
      model: request.model,
      tokenIds: request.tokenIds,
      candidates: candidates.map((c) => c.id),
      overrides: request.overrides,
    };
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    for await (const item of runtime.requests.call(ROUTER_SERVICE_SUBJECT, query, { signal: bounded })) {
      const answer = item as RouteAnswer;
      if (answer?.type === "route-answer" && candidates.some((c) => c.id === answer.workerId)) {
        return { workerId: answer.workerId, overlapBlocks: answer.overlapBlocks };
      }
    }
    throw new ArmatureError("WORKER_UNAVAILABLE", "the router service gave no usable answer", { retryable: true });
  };
}
