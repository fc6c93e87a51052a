import { ArmatureError, type RouteQuery, routeAnswerSchema, subjects } from "../protocol/index.js";
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
      ...(request.lora === undefined ? {} : { lora: request.lora }),
      tokenIds: request.tokenIds,
      candidates: candidates.map((c) => c.id),
      overrides: request.overrides,
    };
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    for await (const item of runtime.requests.call(subjects.routerService, query, { signal: bounded })) {
      const answer = runtime.invalidMessages.accept("route-answer", routeAnswerSchema, item, subjects.routerService);
      if (answer && candidates.some((c) => c.id === answer.workerId)) {
        return { workerId: answer.workerId, overlapBlocks: answer.overlapBlocks };
      }
    }
    throw new ArmatureError("WORKER_UNAVAILABLE", "the router service gave no usable answer", { retryable: true });
  };
}
