import { randomUUID } from "node:crypto";
import { type Engine, processTokenizerBundle, type TokenizerBundle } from "../engines/index.js";
import { type Logger, noTracing, type Tracing } from "../observability/index.js";
import {
  ArmatureError,
  type GenerateRequest,
  type GenerateResponse,
  generateRequestSchema,
  type KvEvent,
  type KvEventBatch,
  type KvEventsDump,
  kvEventsQuerySchema,
  type ModelCard,
  subjects,
  type WorkerLoad,
  type WorkerRole,
  wireTraceContextSchema,
} from "../protocol/index.js";
import {
  type Delivery,
  deliveringHandler,
  type InstanceRecord,
  type Lease,
  type PlannerWorkerOrigin,
  type Registration,
  type RequestContext,
  type Runtime,
  type StreamSink,
} from "../runtime/index.js";
import { TransferAgent, type TransferAgentOptions } from "../transfer/index.js";
import { callSignal } from "./deadline.js";
import { serveDecode, servePrefill } from "./disaggregated-phases.js";
import { HostedCall, type HostedCallHooks } from "./hosted-call.js";
import { KvExports, type KvExportsOptions } from "./kv-exports.js";
import { serveLoraAdmin } from "./lora-service.js";
import { modelCardFor } from "./model-card.js";
import { servePooling } from "./pooling-service.js";
import { withWorkerSpans } from "./request-spans.js";
import { serveTokenizer } from "./tokenizer-service.js";

export interface WorkerHostOptions {
  readonly runtime: Runtime;
  readonly engine: Engine;
  /** Served model name. */
  readonly modelName: string;
  readonly role?: WorkerRole;
  readonly logger: Logger;
  /** Instance id; default a random one. */
  readonly id?: string;
  /** Discovery lease TTL. Default 10 s; keep-alives go every third of it. */
  readonly leaseTtlMs?: number;
  /** Registered with the instance when a planner's local connector started this process. */
  readonly startedBy?: PlannerWorkerOrigin | undefined;
  /** KV event batches kept for recovery queries. Default 1024 (Dynamo's ring buffer). */
  readonly recentEvents?: number;
  /** How often load is published even when it does not change. Default 1 s. */
  readonly loadIntervalMs?: number;
  /** The worker's own transfer agent is made with these (its listener address, for other hosts). */
  readonly transfer?: TransferAgentOptions;
  /** How long a prefill worker keeps exported KV no decode worker has taken. Default 30 s. */
  readonly handoffTtlMs?: number;
  /** Bounds on the KV a prefill worker holds for decode workers (count, bytes, free space kept). */
  readonly exportLimits?: Pick<KvExportsOptions, "maxExports" | "maxBytes" | "minFreeBytes">;
  /** How long a decode worker waits for KV bytes before it prefills locally. Default 10 s. */
  readonly transferTimeoutMs?: number;
  /**
   * The engine's KV exports are modelled, never written (the mocker in a replay): no shared-folder
   * space is checked and no file removed, so no real I/O sits on a request's path. Default false.
   */
  readonly modelledKvExports?: boolean;
  /** Where the spans of traced requests go (`--otlp-endpoint`). Default: none are exported. */
  readonly tracing?: Tracing | undefined;
}

export type WorkerState = "starting" | "running" | "draining" | "stopped";

/**
 * Hosts one engine: registers it in discovery with its model card, serves generate calls on the
 * request plane, and publishes its KV events and load on the event plane.
 */
export class WorkerHost {
  readonly id: string;
  #card: ModelCard;
  #state: WorkerState = "starting";
  readonly #o: WorkerHostOptions;
  readonly #log: Logger;
  /** Pooling calls (embeddings, scores) in flight, each settling when it ends. */
  readonly #inflight = new Set<Promise<void>>();
  /** Generate calls in flight: started, their `request-end` not produced yet. */
  #callsInFlight = 0;
  /** Told when the last generate call in flight ends while the worker drains. */
  #callsDone: (() => void) | undefined;
  /** One object for every generate call this host serves (no closures made per request). */
  readonly #callHooks: HostedCallHooks = {
    ended: () => {
      this.#callsInFlight--;
      if (this.#callsInFlight === 0) this.#callsDone?.();
    },
    finished: () => this.#publishLoad(),
  };
  readonly #stop = new AbortController();
  #lease: Lease | undefined;
  #registration: Registration | undefined;
  #eventId = 0;
  /** The most recent batches, for readers that missed some. */
  readonly #recent: KvEventBatch[] = [];
  #queryRegistration: Registration | undefined;
  #poolingRegistration: Registration | undefined;
  #tokenizerRegistration: Registration | undefined;
  #loraRegistration: Registration | undefined;
  #unwatchAdapters: (() => void) | undefined;
  /** Registrations again after the adapters changed, one at a time. */
  #reregistering: Promise<void> = Promise.resolve();
  /** The tokenizer bundle the card names, handed to frontends that cannot read its path. */
  readonly #tokenizer: TokenizerBundle | undefined;
  #unsubscribeKv: (() => void) | undefined;
  #unwatchPeers: (() => void) | undefined;
  #background: Promise<void>[] = [];
  #agent: TransferAgent | undefined;
  #exports: KvExports | undefined;
  #drained: Promise<void> | undefined;
  #closing = false;

  private constructor(options: WorkerHostOptions, tokenizer: TokenizerBundle | undefined) {
    this.#o = options;
    this.id = options.id ?? `worker-${randomUUID().slice(0, 8)}`;
    const card = modelCardFor(options.engine, options.modelName, options.role ?? "aggregated");
    this.#tokenizer = tokenizer;
    this.#card =
      tokenizer === undefined || card.tokenizer.kind === "bytes"
        ? card
        : { ...card, tokenizer: { ...card.tokenizer, sha256: tokenizer.sha256 } };
    this.#log = options.logger.child({ component: "worker", workerId: this.id });
  }

  /** Starts serving and registers; resolves once the worker is routable. */
  static async create(options: WorkerHostOptions): Promise<WorkerHost> {
    // The card names the tokenizer by its bundle's hash, so frontends on other hosts can fetch it.
    const bundle = await processTokenizerBundle(options.engine.info.tokenizer).catch((error: Error) => {
      options.logger.warn({ err: error }, "the tokenizer cannot be handed to frontends that lack its path");
      return undefined;
    });
    const host = new WorkerHost(options, bundle);
    await host.#start();
    return host;
  }

  /** The card the worker registers: its model, and the LoRA adapters it serves now. */
  get card(): ModelCard {
    return this.#card;
  }

  get state(): WorkerState {
    return this.#state;
  }

  get engine(): Engine {
    return this.#o.engine;
  }

  /** The worker's transfer agent (KV handoffs of disaggregated requests). */
  get transferAgent(): TransferAgent | undefined {
    return this.#agent;
  }

  /** Exported KV a prefill worker holds for decode workers now. */
  get heldHandoffs(): number {
    return this.#exports?.size ?? 0;
  }

  async #start(): Promise<void> {
    const { runtime, engine } = this.#o;
    const agent = await TransferAgent.create({ name: `${this.id}-kv`, ...this.#o.transfer });
    this.#agent = agent;
    // Split roles model handoffs (the mocker) with this host's measured transfer costs.
    if (this.card.role !== "aggregated") await agent.calibrate();
    this.#exports = new KvExports({
      agent,
      clock: runtime.clock,
      logger: this.#log,
      ttlMs: this.#o.handoffTtlMs ?? 30_000,
      ...this.#o.exportLimits,
      modelledOnly: this.#o.modelledKvExports,
    });
    const peers = new Map<string, string>();
    this.#unwatchPeers = runtime.discovery.watch((event) => {
      if (event.type === "instance-added" && event.instance.transferAgent) {
        peers.set(event.instance.id, event.instance.transferAgent.name);
        agent.addRemote(event.instance.transferAgent);
      } else if (event.type === "instance-removed") {
        const name = peers.get(event.instanceId);
        peers.delete(event.instanceId);
        if (name) agent.removeRemote(name);
      }
    });
    this.#unsubscribeKv = engine.onKvEvents((events) => this.#publishKv(events));
    this.#registration = await runtime.requests.serve(
      this.id,
      deliveringHandler((payload, context, sink) => this.#handle(payload, context, sink)),
    );
    this.#queryRegistration = await runtime.requests.serve(subjects.kvQuery(this.id), (payload) => this.#answerKvQuery(payload));
    if (this.#tokenizer) {
      this.#tokenizerRegistration = await serveTokenizer({ runtime, workerId: this.id, bundle: this.#tokenizer });
    }
    this.#poolingRegistration = await servePooling({
      runtime,
      workerId: this.id,
      engine,
      card: this.card,
      accepting: () => this.#state === "running",
      inflight: this.#inflight,
    });
    this.#loraRegistration = await serveLoraAdmin({
      runtime,
      workerId: this.id,
      adapters: engine.adapters,
      engineKind: engine.info.kind,
    });
    this.#unwatchAdapters = engine.adapters?.onChange(() => this.#adaptersChanged());
    this.#lease = await runtime.discovery.register(this.#record(), { ttlMs: this.#ttl() });
    this.#state = "running";
    this.#background.push(this.#keepAliveLoop(), this.#loadLoop());
    this.#log.info({ model: this.card.name, engine: this.card.engine, role: this.card.role }, "worker registered");
  }

  #record(): InstanceRecord {
    return {
      id: this.id,
      role: this.card.role,
      model: this.card.name,
      card: this.card,
      transferAgent: this.#agent?.metadata,
      ...(this.#o.startedBy ? { startedBy: this.#o.startedBy } : {}),
    };
  }

  /** The card lists the adapters served now: registered again, frontends and routers see the change. */
  #adaptersChanged(): void {
    const names = [...(this.#o.engine.adapters?.names() ?? [])];
    const { loras: _before, ...card } = this.#card;
    this.#card = names.length > 0 ? { ...card, loras: names } : card;
    this.#reregistering = this.#reregistering.then(async () => {
      if (this.#state !== "running") return;
      try {
        const previous = this.#lease;
        this.#lease = await this.#o.runtime.discovery.register(this.#record(), { ttlMs: this.#ttl() });
        await previous?.revoke();
        this.#log.info({ loras: names }, "LoRA adapters changed; registered again");
      } catch (error) {
        this.#log.warn({ err: error }, "registering the changed LoRA adapters failed; the keep-alive loop registers again");
      }
    });
  }

  #ttl(): number {
    return this.#o.leaseTtlMs ?? 10_000;
  }

  /**
   * Serves one generate call: the engine's responses are delivered into the caller's sink as the
   * engine yields them. The request counts as in flight until its `request-end` (even if the
   * caller never reads on); the deadline's timer and the load update follow the engine's stream
   * ending, failing or being stopped.
   */
  #handle(payload: unknown, context: RequestContext, sink: StreamSink<unknown>): Delivery {
    if (this.#state !== "running") {
      throw new ArmatureError("WORKER_DRAINING", `worker ${this.id} is shutting down`, { retryable: true });
    }
    const request = this.#o.runtime.invalidMessages.check("generate-request", generateRequestSchema, payload, this.id);
    this.#countDroppedTraceContext(payload, request);
    // The caller's deadline holds here too: work nobody waits for any more stops even if the
    // cancellation is lost on the way.
    const { signal, clear } = callSignal(this.#o.runtime.clock, context, request.timeoutMs);
    const call = new HostedCall(sink, this.#callHooks, clear);
    this.#callsInFlight++;
    this.#publishLoad();
    try {
      const served = this.#serve(request, signal);
      const tracing = this.#o.tracing ?? noTracing;
      call.start(tracing.exporting && request.traceContext ? withWorkerSpans(tracing, this.id, request, served) : served);
    } catch (error) {
      call.finish();
      throw error;
    }
    return call;
  }

  /** A malformed trace context was dropped by the schema (the request is served untraced): count it. */
  #countDroppedTraceContext(payload: unknown, request: GenerateRequest): void {
    const sent = (payload as { traceContext?: unknown }).traceContext;
    if (sent === undefined || request.traceContext !== undefined) return;
    this.#o.runtime.invalidMessages.accept("trace-context", wireTraceContextSchema, sent, this.id);
  }

  #serve(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateResponse> {
    const phase = request.disaggregation;
    const { engine } = this.#o;
    if (phase?.phase === "prefill") return servePrefill(engine, this.#exports as KvExports, this.id, request, signal);
    if (phase?.phase === "decode") {
      const context = {
        engine,
        agent: this.#agent as TransferAgent,
        log: request.traceContext
          ? this.#log.child({ requestId: request.requestId, traceId: request.traceContext.traceparent.slice(3, 35) })
          : this.#log,
        transferTimeoutMs: this.#o.transferTimeoutMs ?? 10_000,
      };
      return serveDecode(context, request, phase.handoff, signal);
    }
    return engine.generate(request, { signal });
  }

  /** Batches from the asked id on, or a dump of the whole cache when they are no longer kept. */
  async *#answerKvQuery(payload: unknown): AsyncGenerator<KvEventBatch | KvEventsDump> {
    const invalid = this.#o.runtime.invalidMessages;
    const from = invalid.check("kv-events-query", kvEventsQuerySchema, payload, subjects.kvQuery(this.id)).fromEventId;
    const oldest = this.#recent[0]?.eventId ?? this.#eventId + 1;
    if (from >= oldest) {
      for (const batch of this.#recent) if (batch.eventId >= from) yield batch;
      return;
    }
    yield { type: "kv-events-dump", workerId: this.id, eventId: this.#eventId, events: this.#o.engine.dumpKvEvents() };
  }

  #publishKv(events: readonly KvEvent[]): void {
    const batch: KvEventBatch = { type: "kv-event-batch", workerId: this.id, eventId: ++this.#eventId, events };
    this.#recent.push(batch);
    if (this.#recent.length > (this.#o.recentEvents ?? 1024)) this.#recent.shift();
    this.#o.runtime.events.publish(subjects.kvEvents(this.id), batch).catch((error: unknown) => {
      this.#log.warn({ err: error }, "failed to publish KV events");
    });
  }

  #publishLoad(): void {
    const load = this.#o.engine.load();
    const message: WorkerLoad = { type: "worker-load", workerId: this.id, ...load, kvEventId: this.#eventId };
    this.#o.runtime.events.publish(subjects.load(this.id), message).catch((error: unknown) => {
      this.#log.warn({ err: error }, "failed to publish load");
    });
  }

  async #keepAliveLoop(): Promise<void> {
    const { clock, discovery } = this.#o.runtime;
    while (!this.#stop.signal.aborted) {
      try {
        await clock.sleep(this.#ttl() / 3, this.#stop.signal);
        if (this.#lease && !(await this.#lease.keepAlive())) {
          this.#log.warn("discovery lease expired; registering again");
          this.#lease = await discovery.register(this.#record(), { ttlMs: this.#ttl() });
        }
      } catch (error) {
        if (this.#stop.signal.aborted) return;
        this.#log.warn({ err: error }, "lease keep-alive failed; will retry");
      }
    }
  }

  async #loadLoop(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      try {
        await this.#o.runtime.clock.sleep(this.#o.loadIntervalMs ?? 1000, this.#stop.signal);
      } catch {
        return;
      }
      this.#publishLoad();
    }
  }

  /**
   * Stops taking requests and deregisters, then waits until the requests in flight finish or
   * `graceMs` passes on the runtime's clock; the engine keeps running. Resolves once idle (or out of
   * grace); calling it again returns the same wait.
   */
  drain(graceMs = 30_000): Promise<void> {
    this.#drained ??= this.#drain(graceMs);
    return this.#drained;
  }

  async #drain(graceMs: number): Promise<void> {
    this.#state = "draining";
    this.#log.info({ inflight: this.#inflight.size + this.#callsInFlight }, "worker draining");
    this.#stop.abort();
    this.#unwatchAdapters?.();
    await this.#reregistering;
    await this.#lease?.revoke();
    await this.#registration?.close();
    await this.#loraRegistration?.close();
    await this.#queryRegistration?.close();
    await this.#poolingRegistration?.close();
    await this.#tokenizerRegistration?.close();
    const graceOver = new AbortController();
    const grace = this.#o.runtime.clock.sleep(graceMs, graceOver.signal).catch(() => undefined);
    const callsDone =
      this.#callsInFlight === 0
        ? undefined
        : new Promise<void>((resolve) => {
            this.#callsDone = resolve;
          });
    await Promise.race([Promise.all([...this.#inflight, callsDone]), grace]);
    graceOver.abort();
  }

  /**
   * Drains (see `drain`) for up to `graceMs`, then closes the engine (which cancels whatever still
   * runs).
   */
  async close(graceMs = 30_000): Promise<void> {
    if (this.#state === "stopped" || this.#closing) return;
    this.#closing = true;
    await this.drain(graceMs);
    this.#unsubscribeKv?.();
    this.#unwatchPeers?.();
    await Promise.all(this.#background);
    await this.#o.engine.close();
    await this.#exports?.close();
    await this.#agent?.close();
    this.#state = "stopped";
    this.#log.info("worker stopped");
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
