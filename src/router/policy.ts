import type { RouteRequest, WorkerView } from "./worker-view.js";

/**
 * A routing policy picks one worker among candidates (never empty) for a request. Policies that
 * learn from traffic (the KV router) also hear when a request is routed, starts decoding and ends.
 */
export interface RoutingPolicy {
  readonly name: string;
  select(candidates: readonly WorkerView[], request: RouteRequest): WorkerView;
  onRouted?(workerId: string, request: RouteRequest): void;
  /** The worker produced the request's first token: its prefill is done. */
  onFirstToken?(workerId: string, request: RouteRequest): void;
  onFinished?(workerId: string, request: RouteRequest): void;
  /** Blocks of the request's prompt the chosen worker already caches, for policies that know. */
  overlapBlocks?(workerId: string, request: RouteRequest): number | undefined;
}
