import { nowMs, randomTraceId } from "./trace-ids.js";
import type { SpanAttributes, TraceContext, TraceSpan, Tracing } from "./tracing.js";
import { parseTraceparent } from "./tracing-context.js";

/** What the router does with a request's trace: marks its admission and hands its context to workers. */
export interface RouteTrace {
  /** The request got its turn (the admission queue let it through); later calls do nothing. */
  admitted(): void;
  /** The context a worker call carries: the `route` span's (started here if `admitted` was not called). */
  readonly workerContext: TraceContext;
}

/** How a request ended, for the `finish` span. */
export interface RequestOutcome {
  readonly finishReason?: string | undefined;
  readonly promptTokens?: number | undefined;
  readonly completionTokens?: number | undefined;
  readonly cachedTokens?: number | undefined;
  /** The HTTP status of an error response. */
  readonly status?: number | undefined;
  /** What failed it; the spans still open are marked failed. */
  readonly error?: unknown;
}

/**
 * One HTTP request's trace on the frontend: its id, chosen on arrival (the client's from a valid
 * `traceparent`, else a new one), and the frontend's spans `admit` (arrival to admission: reading,
 * validation, tokenization, the admission queue), `route` (admission to the worker call, with the
 * remote prefill when prefill and decode are split) and `finish` (the worker's end to the last
 * byte of the response). They are children of the client's span; with no client span, `admit` is
 * the trace's root and the others its children. Spans start only for requests that `begin`.
 */
export class RequestTrace implements RouteTrace {
  readonly traceId: string;
  readonly #tracing: Tracing;
  readonly #client: TraceContext | undefined;
  readonly #arrivedAt: number;
  #admit: TraceSpan | undefined;
  #route: TraceSpan | undefined;
  #endingAt: number | undefined;
  #finished = false;

  constructor(tracing: Tracing, client: TraceContext | undefined, arrivedAt = nowMs()) {
    this.#tracing = tracing;
    const parsed = client ? parseTraceparent(client.traceparent) : undefined;
    this.#client = parsed ? client : undefined;
    this.traceId = parsed?.traceId ?? randomTraceId();
    this.#arrivedAt = arrivedAt;
  }

  /** Starts the `admit` span, back-dated to the request's arrival; later calls add attributes. */
  begin(attributes: SpanAttributes): void {
    if (this.#admit) {
      this.#admit.setAttributes(attributes);
      return;
    }
    this.#admit = this.#tracing.startSpan("admit", {
      parent: this.#client,
      traceId: this.traceId,
      kind: "server",
      startTime: this.#arrivedAt,
      attributes,
    });
  }

  admitted(): void {
    if (this.#route) return;
    this.begin({});
    const now = nowMs();
    this.#admit?.end(now);
    this.#route = this.#tracing.startSpan("route", { parent: this.#parent(), startTime: now });
  }

  get workerContext(): TraceContext {
    this.admitted();
    return (this.#route as TraceSpan).context;
  }

  /** The worker call started: the `route` span ends with the decision. */
  routed(decision: { workerId: string; prefillWorkerId?: string | undefined; overlapBlocks?: number | undefined }): void {
    this.admitted();
    this.#route?.setAttributes({
      "armature.worker_id": decision.workerId,
      "armature.prefill_worker_id": decision.prefillWorkerId,
      "armature.overlap_blocks": decision.overlapBlocks,
    });
    this.#route?.end();
  }

  /** The worker's last message arrived: the `finish` span starts here. */
  ending(): void {
    this.#endingAt ??= nowMs();
  }

  /** The response is sent (or failed): open spans end, and the `finish` span records the outcome. */
  finished(outcome: RequestOutcome): void {
    if (this.#finished || !this.#admit) return;
    this.#finished = true;
    if (!this.#tracing.exporting) return;
    const now = nowMs();
    for (const open of [this.#admit, this.#route]) {
      if (outcome.error !== undefined) open?.fail(outcome.error);
      open?.end(now);
    }
    const finish = this.#tracing.startSpan("finish", {
      parent: this.#parent(),
      startTime: Math.min(this.#endingAt ?? now, now),
      attributes: {
        "armature.finish_reason": outcome.finishReason,
        "gen_ai.usage.input_tokens": outcome.promptTokens,
        "gen_ai.usage.output_tokens": outcome.completionTokens,
        "armature.cached_tokens": outcome.cachedTokens,
        "http.response.status_code": outcome.status,
      },
    });
    if (outcome.error !== undefined) finish.fail(outcome.error);
    finish.end(now);
  }

  #parent(): TraceContext | undefined {
    return this.#client ?? this.#admit?.context;
  }
}
