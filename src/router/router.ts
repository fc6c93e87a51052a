import type { Logger, RouteTrace } from "../observability/index.js";
import {
  ArmatureError,
  type EmbedRequest,
  type GenerateRequest,
  type GenerateResponse,
  generateResponseSchema,
  isArmatureError,
  type RankRequest,
  type WorkerRole,
} from "../protocol/index.js";
import { type Delivery, iterate, type Runtime, type StreamSink } from "../runtime/index.js";
import { ActiveLoad } from "./active-load.js";
import { AdmissionQueue, type QueueTicket, type ShedReason } from "./admission-queue.js";
import { FirstTokenLead } from "./first-token-lead.js";
import type { RoutingPolicy } from "./policy.js";
import { callEmbedding, callRanking, type EmbeddingCall, type RankingCall } from "./pooling-call.js";
import type { PrefillStage } from "./prefill-stage.js";
import type { RemoteSelector } from "./remote-selector.js";
import { type OpenStream, once, tapEnd, tracked } from "./routed-stream.js";
import { WorkerSet } from "./worker-set.js";
import type { RouteRequest, RouterOverrides, WorkerView } from "./worker-view.js";

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

/**
 * Chooses a worker for each request (or honours a pinned one) and calls it on the request plane.
 * Keeps its own in-flight count per worker until the call's stream ends.
 */
export class Router {
  readonly workers: WorkerSet;
  readonly #runtime: Runtime;
  readonly #policy: RoutingPolicy;
  /** One queue per model: a model whose workers are busy never holds back another's requests. */
  readonly #queues = new Map<string, AdmissionQueue>();
  readonly #queueSize: number;
  readonly #load: ActiveLoad;
  #requestSeq = 0;
  readonly #decodeThreshold: number;
  readonly #prefillFrac: number;
  readonly #sequencesFrac: number;
  readonly #priorityReserve: number;
  readonly #lead = new FirstTokenLead();
  readonly #onShed: RouterOptions["onShed"];
  readonly #roles: ReadonlySet<WorkerRole>;
  readonly #prefill: PrefillStage | undefined;
  readonly #remote: RemoteSelector | undefined;
  readonly #ownsWorkers: boolean;
  readonly #unwatchWorkers: () => void;
  readonly #log: Logger;
  #remoteWarnedAt = Number.NEGATIVE_INFINITY;

  /** The runtime whose planes reach the workers (the frontend fetches tokenizers over its request plane). */
  get runtime(): Runtime {
    return this.#runtime;
  }

  constructor(options: RouterOptions) {
    this.#runtime = options.runtime;
    this.#policy = options.policy;
    this.#ownsWorkers = options.workers === undefined;
    this.workers = options.workers ?? new WorkerSet(options.runtime, options.logger);
    this.#queueSize = options.busy?.queueSize ?? 1024;
    this.#load = options.activeLoad ?? new ActiveLoad({ routerId: "local", clock: options.runtime.clock });
    this.#decodeThreshold = options.busy?.activeDecodeBlocks ?? 1;
    this.#prefillFrac = options.busy?.activePrefillTokensFrac ?? 10;
    this.#sequencesFrac = options.busy?.activeSequencesFrac ?? 1;
    this.#priorityReserve = options.busy?.priorityReserve ?? 0;
    this.#onShed = options.onShed;
    this.#roles = new Set(options.roles ?? ["aggregated", "decode"]);
    this.#prefill = options.prefill;
    this.#remote = options.remote;
    this.#log = options.logger.child({ component: "router" });
    // A worker that joins may be free: let a parked request try it.
    this.#unwatchWorkers = this.workers.onChange(() => {
      for (const queue of this.#queues.values()) queue.notify();
    });
  }

  /** Requests parked because every worker was busy. */
  get queuedRequests(): number {
    let waiting = 0;
    for (const queue of this.#queues.values()) waiting += queue.length;
    return waiting;
  }

  /** The model's queue; only models some worker serves get one (route checks that first). */
  #queueOf(model: string): AdmissionQueue {
    let queue = this.#queues.get(model);
    if (!queue) {
      queue = new AdmissionQueue({
        capacity: this.#queueSize,
        clock: this.#runtime.clock,
        leadTime: () => this.#lead.of(model),
        onShed: (reason, priority) => this.#onShed?.(model, reason, priority),
      });
      this.#queues.set(model, queue);
    }
    return queue;
  }

  /**
   * Whether a worker is over a busy threshold, from this router's bookings and its published load,
   * for a request of `priority` (a deferred one, above 0, leaves the priority reserve free).
   */
  isBusy(worker: WorkerView, priority = 0): boolean {
    const booked = this.#load.of(worker.id);
    const blocks = Math.max(booked.decodeBlocks, worker.published?.activeKvBlocks ?? 0);
    const published = worker.published;
    const sequences = Math.max(worker.inflight, published ? published.activeRequests + published.waitingRequests : 0);
    return (
      blocks > this.#decodeThreshold * worker.card.totalKvBlocks ||
      booked.prefillTokens > this.#prefillFrac * worker.card.maxBatchedTokens ||
      sequences >= this.#sequencesFrac * worker.card.maxSequences * (priority > 0 ? 1 - this.#priorityReserve : 1)
    );
  }

  get policyName(): string {
    return this.#policy.name;
  }

  /** Workers of `model` in this router's roles; with `lora`, those that serve that adapter. */
  eligibleWorkers(model: string, lora?: string): WorkerView[] {
    return this.workers
      .forModel(model)
      .filter((w) => this.#roles.has(w.card.role) && (lora === undefined || (w.card.loras?.includes(lora) ?? false)));
  }

  /**
   * Picks a worker and starts the call. While every worker is busy the request waits in a bounded
   * queue ordered by `request.priority` (lower first), then by deadline (`request.timeoutMs` from
   * now), then by arrival. Throws `ROUTER_NO_WORKER` when no worker serves the model,
   * `ROUTER_WORKER_NOT_FOUND` when the pinned worker is not one of them and `ROUTER_OVERLOADED`
   * when the queue is full (or a request of higher priority took its place) and
   * `ROUTER_DEADLINE_UNREACHABLE` when its deadline would pass before it could run.
   */
  async route(
    request: GenerateRequest,
    options: {
      signal: AbortSignal;
      pinnedWorkerId?: string | undefined;
      overrides?: RouterOverrides | undefined;
      /** Workers not to use for this request (one that just failed it). */
      excludeWorkerIds?: readonly string[] | undefined;
      /** The request already waited its turn for a decode worker (before its prefill ran). */
      admitted?: boolean | undefined;
      /** The request's trace: told when the request is admitted; its context goes with the worker call. */
      trace?: RouteTrace | undefined;
    },
  ): Promise<RoutedCall> {
    const excluded = new Set(options.excludeWorkerIds ?? []);
    const eligible = (): WorkerView[] => this.eligibleWorkers(request.model, request.lora).filter((w) => !excluded.has(w.id));
    const priority = request.priority ?? 0;
    const free = (): boolean => eligible().some((w) => !this.isBusy(w, priority));
    let candidates = eligible();
    let admitted = options.admitted === true;
    const now = this.#runtime.clock.now();
    const ticket: QueueTicket = {
      priority: request.priority,
      deadline: request.timeoutMs === undefined ? undefined : now + request.timeoutMs,
    };
    let admittedAt = now;
    // An adapter's requests are prefilled where they decode: prefill workers run the base model.
    const split = this.#prefill && !request.disaggregation && request.lora === undefined;
    if (candidates.length > 0 && split && options.pinnedWorkerId === undefined) {
      // Decode capacity first: a request refused after its prefill would strand the exported KV.
      await this.#queueOf(request.model).admit(free, options.signal, ticket);
      admitted = true;
      options.trace?.admitted();
      // Then, if the prefill runs remotely, its decode worker, booked while the prefill runs: the
      // prefill worker leaves out the KV that worker holds.
      let decodeWorker: { id: string; release: () => void } | undefined;
      const chooseDecodeWorker = async (): Promise<string | undefined> => {
        decodeWorker = await this.#reserveDecodeWorker(request, eligible(), options);
        return decodeWorker?.id;
      };
      try {
        const staged = await this.#prefill.run(request, options.signal, chooseDecodeWorker, options.trace);
        if (staged?.end) {
          const end = staged.end;
          return routedCall(
            { workerId: staged.prefillWorkerId, prefillWorkerId: staged.prefillWorkerId, overlapBlocks: staged.overlapBlocks },
            once(end),
          );
        }
        if (staged) {
          const decode: GenerateRequest = { ...request, disaggregation: { phase: "decode", handoff: staged.handoff } };
          const call = await this.#routeDecode(decode, decodeWorker?.id, options);
          const onEnd = this.#prefill.onDecodeEnd;
          // The prompt's cache hits happened on the prefill worker.
          return routedCall(
            { workerId: call.workerId, prefillWorkerId: staged.prefillWorkerId, overlapBlocks: staged.overlapBlocks },
            onEnd ? tapEnd(call.open, onEnd) : call.open,
          );
        }
      } finally {
        decodeWorker?.release();
      }
    }
    if (candidates.length === 0 && !admitted && options.pinnedWorkerId === undefined && this.workers.isKept(request.model)) {
      // The model's pool is scaled to zero: the request waits its turn for the worker its arrival wakes.
      await this.#queueOf(request.model).admit(free, options.signal, ticket);
      admitted = true;
      admittedAt = this.#runtime.clock.now();
      candidates = eligible();
    }
    if (candidates.length === 0) {
      throw new ArmatureError("ROUTER_NO_WORKER", `no worker serves ${servedName(request)} right now`, { retryable: true });
    }
    if (options.pinnedWorkerId === undefined) {
      let idle: WorkerView[] = [];
      do {
        if (!admitted) {
          await this.#queueOf(request.model).admit(free, options.signal, ticket);
          admittedAt = this.#runtime.clock.now();
        }
        idle = eligible().filter((w) => !this.isBusy(w, priority));
        // Requests admitted at the same instant may have taken the last free worker meanwhile: wait again.
      } while (!admitted && idle.length === 0 && eligible().length > 0);
      // Admitted before its prefill, the request goes on even if its decode worker filled up since.
      candidates = preferResident(idle.length > 0 || !admitted ? idle : eligible(), request.lora);
      if (candidates.length === 0) {
        throw new ArmatureError("ROUTER_NO_WORKER", `no worker serves ${servedName(request)} right now`, { retryable: true });
      }
    }
    options.trace?.admitted();
    // From here to the booking (`#book`) nothing awaits but the router service: requests admitted at
    // the same instant choose in turn, each on a load that holds the bookings of those before it
    // (an await in between let them all choose on the same load; router.test.ts has the case).
    const routeRequest = { model: request.model, lora: request.lora, tokenIds: request.tokenIds, overrides: options.overrides };
    let chosen: WorkerView;
    let remoteOverlap: number | undefined;
    if (options.pinnedWorkerId !== undefined) {
      chosen = pinnedWorker(candidates, options.pinnedWorkerId, request.model);
    } else if (this.#remote) {
      const answer = await this.#askRemote(candidates, routeRequest, options.signal);
      chosen = candidates.find((w) => w.id === answer?.workerId) ?? this.#policy.select(candidates, routeRequest);
      remoteOverlap = answer?.overlapBlocks;
    } else {
      chosen = this.#policy.select(candidates, routeRequest);
    }
    const overlapBlocks = remoteOverlap ?? this.#policy.overlapBlocks?.(chosen.id, routeRequest);
    return this.#book(request, chosen, overlapBlocks, routeRequest, options, admitted ? undefined : admittedAt);
  }

  /**
   * Books the request on `chosen` (its uncached prompt tokens and its blocks, until the call ends)
   * and opens the call: the worker's responses are checked as they arrive; the first token frees
   * the booked prefill and, for a request that waited its turn from `waitedFrom`, records the
   * first-token lead; the end frees the booking. Synchronous, so the booking lands in the same
   * run as the choice (see `route`).
   */
  #book(
    request: GenerateRequest,
    chosen: WorkerView,
    overlapBlocks: number | undefined,
    routeRequest: RouteRequest,
    options: { signal: AbortSignal; trace?: RouteTrace | undefined },
    waitedFrom: number | undefined,
  ): RoutedCall {
    const workerId = chosen.id;
    const bookingId = `${request.requestId}#${++this.#requestSeq}`;
    const blocks = Math.ceil(request.tokenIds.length / chosen.card.blockSize);
    const handedOff = request.disaggregation?.phase === "decode";
    const uncached = handedOff ? 0 : Math.max(0, request.tokenIds.length - (overlapBlocks ?? 0) * chosen.card.blockSize);
    this.#load.add(bookingId, workerId, uncached, blocks);
    this.workers.adjustInflight(workerId, 1);
    this.#policy.onRouted?.(workerId, routeRequest);
    const sent = options.trace ? { ...request, traceContext: options.trace.workerContext } : request;
    const requests = this.#runtime.requests;
    const source = (sink: StreamSink<unknown>): Delivery => requests.open(workerId, sent, sink, { signal: options.signal });
    const release = (): void => {
      this.#load.free(bookingId);
      this.workers.adjustInflight(workerId, -1);
      this.#policy.onFinished?.(workerId, routeRequest);
      this.#queues.get(request.model)?.notify();
    };
    const firstToken = (): void => {
      if (waitedFrom !== undefined) this.#lead.record(request.model, this.#runtime.clock.now() - waitedFrom);
      this.#load.prefillDone(bookingId);
      this.#policy.onFirstToken?.(workerId, routeRequest);
      this.#queues.get(request.model)?.notify();
    };
    return routedCall(
      { workerId, overlapBlocks },
      tracked(source, release, firstToken, (item) => {
        const response = this.#runtime.invalidMessages.accept("generate-response", generateResponseSchema, item, workerId);
        if (!response)
          throw new ArmatureError("ENGINE_FAILED", `worker ${workerId} sent a malformed response`, { retryable: true });
        return response;
      }),
    );
  }

  /**
   * Chooses a disaggregated request's decode worker before its prefill runs, as its decode call
   * would (by load: overlap weight 0, the prompt blocks a worker caches counting as blocks it need
   * not take), and books the request's blocks on it until `release`, which follows the decode
   * call's own booking: requests that arrive meanwhile see the load.
   */
  async #reserveDecodeWorker(
    request: GenerateRequest,
    eligible: readonly WorkerView[],
    options: { signal: AbortSignal; overrides?: RouterOverrides | undefined },
  ): Promise<{ id: string; release: () => void } | undefined> {
    const idle = eligible.filter((w) => !this.isBusy(w));
    const candidates = idle.length > 0 ? idle : eligible;
    if (candidates.length === 0) return undefined;
    const overrides = { ...options.overrides, overlapWeight: 0 };
    const routeRequest: RouteRequest = { model: request.model, lora: request.lora, tokenIds: request.tokenIds, overrides };
    const answer = this.#remote ? await this.#askRemote(candidates, routeRequest, options.signal) : undefined;
    const chosen = candidates.find((w) => w.id === answer?.workerId) ?? this.#policy.select(candidates, routeRequest);
    const bookingId = `${request.requestId}#${++this.#requestSeq}`;
    this.#load.add(bookingId, chosen.id, 0, Math.ceil(request.tokenIds.length / chosen.card.blockSize));
    return {
      id: chosen.id,
      release: () => {
        this.#load.free(bookingId);
        this.#queues.get(request.model)?.notify();
      },
    };
  }

  /**
   * Sends the decode half to the worker chosen for it; when that one left meanwhile, to another by
   * load (which, lacking the prompt's first blocks, prefills the prompt itself).
   */
  async #routeDecode(
    decode: GenerateRequest,
    workerId: string | undefined,
    options: Parameters<Router["route"]>[1],
  ): Promise<RoutedCall> {
    const overrides = { ...options.overrides, overlapWeight: 0 };
    try {
      return await this.route(decode, { ...options, admitted: true, overrides, pinnedWorkerId: workerId });
    } catch (error) {
      if (workerId === undefined || !isArmatureError(error) || error.code !== "ROUTER_WORKER_NOT_FOUND") throw error;
      return this.route(decode, { ...options, admitted: true, overrides });
    }
  }

  /**
   * Sends an embedding request to the least-loaded aggregated or prefill worker of its model (see
   * `callEmbedding`); iterate the call's stream to its end or leave it, which frees the worker's slot.
   */
  embed(
    request: EmbedRequest,
    options: { signal: AbortSignal; excludeWorkerIds?: readonly string[] | undefined },
  ): EmbeddingCall {
    return callEmbedding(this.#runtime, this.workers, request, this.#pooled(request.model, options));
  }

  /** Sends a ranking request as `embed` sends an embedding request (see `callRanking`). */
  rank(request: RankRequest, options: { signal: AbortSignal; excludeWorkerIds?: readonly string[] | undefined }): RankingCall {
    return callRanking(this.#runtime, this.workers, request, this.#pooled(request.model, options));
  }

  /**
   * A pooled call's options: embeddings and scores count among a worker's sequences, so a request
   * of the model parked behind them tries again when one ends.
   */
  #pooled<O extends object>(model: string, options: O): O & { onRelease: () => void } {
    return { ...options, onRelease: () => this.#queues.get(model)?.notify() };
  }

  close(): void {
    this.#unwatchWorkers();
    if (this.#ownsWorkers) this.workers.close();
  }

  /** The router service's choice, or undefined (logged, at most every 10 s) when it cannot answer. */
  async #askRemote(
    candidates: readonly WorkerView[],
    request: RouteRequest,
    signal: AbortSignal,
  ): Promise<{ workerId: string; overlapBlocks: number | undefined } | undefined> {
    try {
      return await (this.#remote as RemoteSelector)(candidates, request, signal);
    } catch (error) {
      if (signal.aborted) throw error;
      const now = this.#runtime.clock.now();
      if (now - this.#remoteWarnedAt > 10_000) {
        this.#remoteWarnedAt = now;
        this.#log.warn({ err: error }, "the router service did not answer; this frontend routes with its own policy meanwhile");
      }
      return undefined;
    }
  }
}

/** A routed call whose `stream` is made when first read (most calls are delivered into a sink), then kept. */
function routedCall(fields: Omit<RoutedCall, "open" | "stream">, open: OpenStream): RoutedCall {
  let stream: AsyncIterable<GenerateResponse> | undefined;
  return {
    ...fields,
    open,
    get stream() {
      stream ??= iterate(open);
      return stream;
    },
  };
}

/**
 * For an adapter's request, the candidates that have it ready (`residentLoras` in their published
 * load), when any: elsewhere it would first have to load, and displace another adapter.
 */
function preferResident(candidates: WorkerView[], lora: string | undefined): WorkerView[] {
  if (lora === undefined) return candidates;
  const ready = candidates.filter((w) => w.published?.residentLoras?.includes(lora));
  return ready.length > 0 ? ready : candidates;
}

/** The pinned worker among the candidates (`nvext.backend_instance_id`), or the error that names it. */
function pinnedWorker(candidates: readonly WorkerView[], workerId: string, model: string): WorkerView {
  const chosen = candidates.find((w) => w.id === workerId);
  if (chosen) return chosen;
  throw new ArmatureError(
    "ROUTER_WORKER_NOT_FOUND",
    `worker ${workerId} (nvext.backend_instance_id) does not serve model ${model}; GET /health lists the instances`,
    { param: "nvext.backend_instance_id" },
  );
}

/** "model M", or "LoRA adapter A of model M". */
function servedName(request: GenerateRequest): string {
  return request.lora === undefined ? `model ${request.model}` : `LoRA adapter ${request.lora} of model ${request.model}`;
}
