import type { Logger, RouteTrace } from "../observability/index.js";
import type { GenerateResponse, WorkerRole } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import type { ActiveLoad } from "./active-load.js";
import type { ShedReason } from "./admission-queue.js";
import type { RoutingPolicy } from "./policy.js";
import type { PrefillStage } from "./prefill-stage.js";
import type { RemoteSelector } from "./remote-selector.js";
import type { OpenStream } from "./routed-stream.js";
import type { WorkerSet } from "./worker-set.js";
import type { RouterOverrides } from "./worker-view.js";

// What a Router is made with, what one call to it takes, and what it gives back.

/** When a worker counts as busy (Dynamo's request-rejection thresholds). */
export interface BusyThresholds {
  /** Busy when its active KV blocks exceed this fraction of its capacity. Default 1.0. */
  readonly activeDecodeBlocks?: number;
  /** Busy when its active prefill tokens exceed this many times its max batched tokens. Default 10. */
  readonly activePrefillTokensFrac?: number;
  /**
   * Busy when the requests it runs or holds waiting reach this many times the sequences it runs at
   * once (`maxSequences`): further requests wait in the router's queue, in priority order, rather
   * than in the engine's own first-come queue. Default 1.0.
   */
  readonly activeSequencesFrac?: number;
  /**
   * The share of each worker's sequences kept for requests of priority 0 or more urgent: deferred
   * requests (priority above 0, such as batch work) count a worker as busy once it runs
   * (1 − this) of what the sequences threshold allows, so urgent arrivals find a free sequence.
   * Default 0.
   */
  readonly priorityReserve?: number;
  /** Requests that may wait while every worker is busy; more get HTTP 503. Default 1024. */
  readonly queueSize?: number;
}

export interface RouterOptions {
  readonly runtime: Runtime;
  readonly policy: RoutingPolicy;
  readonly logger: Logger;
  readonly busy?: BusyThresholds;
  /** Where bookings go; share one between replicas (and with the KV policy). Default: a local one. */
  readonly activeLoad?: ActiveLoad;
  /** Worker roles this router sends requests to. Default aggregated and decode workers. */
  readonly roles?: readonly WorkerRole[];
  /** Disaggregation: runs the prefill on a prefill worker before the request is routed here. */
  readonly prefill?: PrefillStage | undefined;
  /** Asks an `armature router` process to choose; the local policy decides when it cannot answer. */
  readonly remote?: RemoteSelector | undefined;
  /** A worker set to share with another router of this frontend (its owner closes it). Default: its own. */
  readonly workers?: WorkerSet | undefined;
  /** Told of each request the admission queue refused or shed (full, displaced, deadline unreachable). */
  readonly onShed?: ((model: string, reason: ShedReason, priority: number) => void) | undefined;
}

/** A routed call: which worker serves it and the stream of its responses. */
export interface RoutedCall {
  readonly workerId: string;
  /** Prompt blocks the worker already caches, when the policy knows (the KV policy does). */
  readonly overlapBlocks: number | undefined;
  /** The worker that prefilled the request, when it was disaggregated. */
  readonly prefillWorkerId?: string | undefined;
  /** Opens the call's stream into a sink (the worker's responses pushed as they arrive). */
  readonly open: OpenStream;
  /** The same stream read as an async iterable; take it one way or the other, once. */
  readonly stream: AsyncIterable<GenerateResponse>;
}

/** How one call to `Router.route` is made. */
export interface RouteOptions {
  readonly signal: AbortSignal;
  readonly pinnedWorkerId?: string | undefined;
  readonly overrides?: RouterOverrides | undefined;
  /** Workers not to use for this request (one that just failed it). */
  readonly excludeWorkerIds?: readonly string[] | undefined;
  /** The request already waited its turn for a decode worker (before its prefill ran). */
  readonly admitted?: boolean | undefined;
  /** The request's trace: told when the request is admitted; its context goes with the worker call. */
  readonly trace?: RouteTrace | undefined;
}
