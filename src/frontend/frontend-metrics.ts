import type { CounterMetric, GaugeMetric, HistogramMetric, MetricMeter } from "../observability/index.js";
import type { WorkerView } from "../router/index.js";

const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const ITL_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 131072];

export interface RequestOutcome {
  readonly endpoint:
    | "chat_completions"
    | "completions"
    | "responses"
    | "messages"
    | "kserve_infer"
    | "kserve_generate"
    | "embeddings"
    | "rerank"
    | "score";
  readonly requestType: "stream" | "unary";
  readonly status: "success" | "error";
  readonly errorType?: string | undefined;
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
  readonly cachedTokens?: number | undefined;
  /** Of `cachedTokens`, those the worker loaded back from its tiers below the device. */
  readonly hostCachedTokens?: number | undefined;
}

/** A request as it ended, with its latencies (for listeners such as the planner). */
export interface FinishedRequestTimings extends RequestOutcome {
  readonly model: string;
  /** Time to the first token, ms; absent when none came. */
  readonly ttftMs: number | undefined;
  /** Mean time between tokens after the first, ms; absent with fewer than two. */
  readonly itlMs: number | undefined;
  /** The worker that decoded it (its ITL's), and the one that prefilled it (its TTFT's) when split. */
  readonly workerId?: string | undefined;
  readonly prefillWorkerId?: string | undefined;
}

/** Where the router sent a request, as the frontend heard it (for listeners such as the dashboard). */
export interface RoutingDecision {
  readonly model: string;
  readonly workerId: string;
  /** The worker that prefilled it, when prefill and decode were split. */
  readonly prefillWorkerId: string | undefined;
  /** Prompt blocks the chosen worker already held, when the policy knows (the KV policy does). */
  readonly overlapBlocks: number | undefined;
  readonly promptTokens: number;
  /** Tokens per KV block of the model. */
  readonly blockSize: number;
}

/**
 * Follows one request while it runs (the embedded planner's live latencies), on the
 * `performance.now()` clock: where it was routed, when its tokens came, when it ended.
 */
export interface RunningRequestListener {
  routed(workerId: string, prefillWorkerId?: string): void;
  tokens(nowMs: number, count: number): void;
  end(nowMs: number): void;
}

/** A model's series of the per-request metrics, each bound to its labels. */
export interface ModelSeries {
  readonly inflight: { inc(value?: number): void; dec(value?: number): void };
  readonly ttft: (seconds: number) => void;
  readonly itl: (seconds: number) => void;
  readonly duration: (seconds: number) => void;
  readonly inputTokens: (tokens: number) => void;
  readonly outputTokens: (tokens: number) => void;
  readonly outputTokensTotal: (tokens?: number) => void;
  readonly cachedTokens: (tokens: number) => void;
  readonly hostCachedTokensTotal: (tokens?: number) => void;
}

/** Tracks one request's latencies as its tokens arrive. */
export class RequestTimer {
  readonly #metrics: FrontendMetrics;
  readonly #model: string;
  readonly #startedAt: number;
  #firstTokenAt: number | undefined;
  #lastTokenAt: number | undefined;
  #tokens = 0;
  #finished = false;
  #workerId: string | undefined;
  #prefillWorkerId: string | undefined;
  readonly #listener: RunningRequestListener | undefined;
  readonly #series: ModelSeries;

  constructor(metrics: FrontendMetrics, model: string, startedAt = performance.now()) {
    this.#metrics = metrics;
    this.#startedAt = startedAt;
    this.#model = model;
    this.#series = metrics.seriesOf(model);
    this.#series.inflight.inc();
    this.#listener = metrics.onStarted?.(startedAt, model);
  }

  onTokens(count: number): void {
    const now = performance.now();
    this.#tokens += count;
    this.#listener?.tokens(now, count);
    if (this.#lastTokenAt === undefined) {
      this.#firstTokenAt = now;
      this.#series.ttft((now - this.#startedAt) / 1000);
    } else if (count > 0) {
      const perToken = (now - this.#lastTokenAt) / 1000 / count;
      const observe = this.#series.itl;
      for (let i = 0; i < count; i++) observe(perToken);
    }
    this.#lastTokenAt = now;
  }

  /** Tells the routing listener where the request went. */
  routed(decision: Omit<RoutingDecision, "model">): void {
    this.#workerId = decision.workerId;
    this.#prefillWorkerId = decision.prefillWorkerId;
    this.#listener?.routed(decision.workerId, decision.prefillWorkerId);
    this.#metrics.onRouted?.({ ...decision, model: this.#model });
  }

  finish(outcome: RequestOutcome): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#listener?.end(performance.now());
    const m = this.#metrics;
    const series = this.#series;
    series.inflight.dec();
    m.requestCounter(this.#model, outcome)();
    series.duration((performance.now() - this.#startedAt) / 1000);
    if (outcome.inputTokens !== undefined) series.inputTokens(outcome.inputTokens);
    if (outcome.outputTokens !== undefined) {
      series.outputTokens(outcome.outputTokens);
      series.outputTokensTotal(outcome.outputTokens);
    }
    if (outcome.cachedTokens !== undefined) series.cachedTokens(outcome.cachedTokens);
    if (outcome.hostCachedTokens) series.hostCachedTokensTotal(outcome.hostCachedTokens);
    if (m.onFinished) {
      const first = this.#firstTokenAt;
      const last = this.#lastTokenAt;
      m.onFinished({
        ...outcome,
        model: this.#model,
        ttftMs: first === undefined ? undefined : first - this.#startedAt,
        itlMs: first !== undefined && last !== undefined && this.#tokens > 1 ? (last - first) / (this.#tokens - 1) : undefined,
        workerId: this.#workerId,
        prefillWorkerId: this.#prefillWorkerId,
      });
    }
  }
}

/** The frontend's Prometheus metrics, named after Dynamo's `dynamo_frontend_*` family. */
export class FrontendMetrics {
  readonly requests: CounterMetric;
  readonly inflight: GaugeMetric;
  readonly ttft: HistogramMetric;
  readonly itl: HistogramMetric;
  readonly duration: HistogramMetric;
  readonly inputTokens: HistogramMetric;
  readonly outputTokens: HistogramMetric;
  readonly outputTokensTotal: CounterMetric;
  readonly cachedTokens: HistogramMetric;
  readonly hostCachedTokensTotal: CounterMetric;
  /** Hears every request as it ends, with its latencies. */
  readonly onFinished: ((request: FinishedRequestTimings) => void) | undefined;
  /** Hears where each request was routed. */
  readonly onRouted: ((decision: RoutingDecision) => void) | undefined;
  /** Follows each request of `model` from its start (`startedAt`, on `performance.now()`'s clock) while it runs. */
  readonly onStarted: ((startedAt: number, model: string) => RunningRequestListener | undefined) | undefined;
  readonly disconnected: CounterMetric;
  readonly migrations: CounterMetric;
  readonly #kvHitRate: HistogramMetric;
  readonly #kvEventsApplied: GaugeMetric;
  readonly #queuePending: GaugeMetric;
  readonly #invalidMessages: GaugeMetric;
  readonly #workerBlocks: GaugeMetric;
  readonly #workerRequests: GaugeMetric;
  readonly #modelKvBlocks: GaugeMetric;
  readonly #modelContext: GaugeMetric;
  readonly #modelBlockSize: GaugeMetric;
  #knownWorkers = new Set<string>();
  readonly #seriesByModel = new Map<string, ModelSeries>();
  readonly #requestCounters = new Map<string, () => void>();

  constructor(
    meter: MetricMeter,
    onFinished?: (request: FinishedRequestTimings) => void,
    onRouted?: (decision: RoutingDecision) => void,
    onStarted?: (startedAt: number, model: string) => RunningRequestListener | undefined,
  ) {
    this.onFinished = onFinished;
    this.onRouted = onRouted;
    this.onStarted = onStarted;
    const p = "frontend_";
    this.requests = meter.counter(`${p}requests_total`, "Requests handled, by endpoint, type and outcome", [
      "model",
      "endpoint",
      "request_type",
      "status",
      "error_type",
    ]);
    this.inflight = meter.gauge(`${p}inflight_requests`, "Requests being served now", ["model"]);
    this.ttft = meter.histogram(
      `${p}time_to_first_token_seconds`,
      "Time from request arrival to the first token",
      ["model"],
      LATENCY_BUCKETS,
    );
    this.itl = meter.histogram(
      `${p}inter_token_latency_seconds`,
      "Time between consecutive output tokens",
      ["model"],
      ITL_BUCKETS,
    );
    this.duration = meter.histogram(
      `${p}request_duration_seconds`,
      "Time from request arrival to its last byte",
      ["model"],
      DURATION_BUCKETS,
    );
    this.inputTokens = meter.histogram(`${p}input_sequence_tokens`, "Prompt length in tokens", ["model"], TOKEN_BUCKETS);
    this.outputTokens = meter.histogram(`${p}output_sequence_tokens`, "Completion length in tokens", ["model"], TOKEN_BUCKETS);
    this.outputTokensTotal = meter.counter(`${p}output_tokens_total`, "Completion tokens generated", ["model"]);
    this.cachedTokens = meter.histogram(
      `${p}cached_tokens`,
      "Prompt tokens served from a worker's prefix cache",
      ["model"],
      TOKEN_BUCKETS,
    );
    this.hostCachedTokensTotal = meter.counter(
      `${p}host_cached_tokens_total`,
      "Prompt tokens workers loaded back from their tiers below the device (host; llama.cpp also disk and object store) instead of recomputing (part of cached_tokens)",
      ["model"],
    );
    this.#kvHitRate = meter.histogram(
      `${p}kv_hit_rate`,
      "Share of each prompt the chosen worker already cached, as the KV router saw it",
      ["model"],
      [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1],
    );
    this.#kvEventsApplied = meter.gauge(
      "router_kv_cache_events_applied",
      "KV events the router's index applied since start, by event type and outcome",
      ["event_type", "status"],
    );
    this.#invalidMessages = meter.gauge(
      "plane_messages_dropped",
      "Malformed messages from the request, event and discovery planes dropped since start, by the kind they claimed",
      ["kind"],
    );
    this.#queuePending = meter.gauge(`${p}router_queue_pending_requests`, "Requests waiting because every worker is busy");
    this.migrations = meter.counter(
      `${p}model_migration_total`,
      "Requests moved to another worker after theirs failed mid-stream",
      ["model"],
    );
    this.disconnected = meter.counter(`${p}disconnected_clients`, "Clients that went away before their response ended");
    this.#workerBlocks = meter.gauge(`${p}worker_active_decode_blocks`, "KV blocks in use on each worker, as it last reported", [
      "worker_id",
      "worker_type",
    ]);
    this.#workerRequests = meter.gauge(`${p}worker_inflight_requests`, "Requests this frontend has in flight on each worker", [
      "worker_id",
      "worker_type",
    ]);
    this.#modelKvBlocks = meter.gauge(`${p}model_total_kv_blocks`, "KV capacity of one worker of the model, in blocks", [
      "model",
    ]);
    this.#modelContext = meter.gauge(`${p}model_context_length`, "Context length of the model, in tokens", ["model"]);
    this.#modelBlockSize = meter.gauge(`${p}model_kv_cache_block_size`, "Tokens per KV block", ["model"]);
  }

  /** A model's per-request series, labels resolved once (they run for every request or token). */
  seriesOf(model: string): ModelSeries {
    let series = this.#seriesByModel.get(model);
    if (!series) {
      const labels = { model };
      series = {
        inflight: this.inflight.bind(labels),
        ttft: this.ttft.bind(labels),
        itl: this.itl.bind(labels),
        duration: this.duration.bind(labels),
        inputTokens: this.inputTokens.bind(labels),
        outputTokens: this.outputTokens.bind(labels),
        outputTokensTotal: this.outputTokensTotal.bind(labels),
        cachedTokens: this.cachedTokens.bind(labels),
        hostCachedTokensTotal: this.hostCachedTokensTotal.bind(labels),
      };
      this.#seriesByModel.set(model, series);
    }
    return series;
  }

  /** The `requests_total` series of a model and an outcome, resolved once (a handful per model). */
  requestCounter(model: string, outcome: RequestOutcome): () => void {
    const errorType = outcome.errorType ?? "";
    const key = `${model}\n${outcome.endpoint}\n${outcome.requestType}\n${outcome.status}\n${errorType}`;
    let inc = this.#requestCounters.get(key);
    if (!inc) {
      inc = this.requests.bind({
        model,
        endpoint: outcome.endpoint,
        request_type: outcome.requestType,
        status: outcome.status,
        error_type: errorType,
      });
      this.#requestCounters.set(key, inc);
    }
    return inc;
  }

  setQueuePending(count: number): void {
    this.#queuePending.set({}, count);
  }

  observeKvHit(model: string, share: number): void {
    this.#kvHitRate.observe({ model }, Math.min(1, share));
  }

  /** Copies the KV index's applied-event counts (kept by the index) into the gauge. */
  refreshKvEvents(applied: ReadonlyMap<string, number>): void {
    for (const [key, count] of applied) {
      const [type, status] = key.split(":") as [string, string];
      this.#kvEventsApplied.set({ event_type: type.replace(/^kv-(block-)?/, ""), status }, count);
    }
  }

  /** Copies the runtime's dropped-message counts into the gauge. */
  refreshInvalidMessages(counts: ReadonlyMap<string, number>): void {
    for (const [kind, count] of counts) this.#invalidMessages.set({ kind }, count);
  }

  /** Times a request for `model` (a served model's name: labels must stay bounded) from `startedAt`. */
  startRequest(model: string, startedAt?: number): RequestTimer {
    return new RequestTimer(this, model, startedAt);
  }

  /** Refreshes the per-worker and per-model gauges; called before each scrape. */
  refreshWorkers(workers: readonly WorkerView[]): void {
    const now = new Set<string>();
    for (const w of workers) {
      const labels = { worker_id: w.id, worker_type: w.card.role };
      now.add(JSON.stringify(labels));
      this.#workerBlocks.set(labels, w.published?.activeKvBlocks ?? 0);
      this.#workerRequests.set(labels, w.inflight);
      this.#modelKvBlocks.set({ model: w.card.name }, w.card.totalKvBlocks);
      this.#modelContext.set({ model: w.card.name }, w.card.contextLength);
      this.#modelBlockSize.set({ model: w.card.name }, w.card.blockSize);
    }
    for (const gone of this.#knownWorkers) {
      if (now.has(gone)) continue;
      const labels = JSON.parse(gone) as Record<string, string>;
      this.#workerBlocks.remove(labels);
      this.#workerRequests.remove(labels);
    }
    this.#knownWorkers = now;
  }
}
