import type { RouteTrace } from "../observability/index.js";
import { type GenerateRequest, type GenerateResponse, isArmatureError } from "../protocol/index.js";
import type { RoutedCall, Router, RouterOverrides } from "../router/index.js";
import type { Delivery, StreamSink } from "../runtime/index.js";

export interface MigrationOptions {
  readonly signal: AbortSignal;
  /** How many times a request may move to another worker. */
  readonly limit: number;
  readonly overrides?: RouterOverrides | undefined;
  /** Told each time the request moves, with the worker it left and the one it moved to. */
  readonly onMigrate?: (from: string, to: string, generated: number) => void;
  /** The request's trace: the call on the next worker carries it too. */
  readonly trace?: RouteTrace | undefined;
}

/**
 * Delivers the responses of a routed call into `sink`, continued on another worker when the first
 * fails mid-stream with a retryable error (it died, drained or lost its connection): the new
 * request carries the tokens generated so far after the prompt and asks only for the rest, so the
 * sink sees one stream (Dynamo's request migration). Usage in the final `request-end` covers the
 * whole request; the sink's `end` follows it at once. Stopping the delivery after the
 * `request-end` cancels nothing: the worker's stream runs to its own end, which changes nothing.
 */
export function migratingStream(
  router: Router,
  request: GenerateRequest,
  first: RoutedCall,
  options: MigrationOptions,
  sink: StreamSink<GenerateResponse>,
): Delivery {
  return new MigratingDelivery(router, request, first, options, sink);
}

class MigratingDelivery implements Delivery, StreamSink<GenerateResponse> {
  readonly #router: Router;
  readonly #request: GenerateRequest;
  readonly #options: MigrationOptions;
  readonly #down: StreamSink<GenerateResponse>;
  readonly #failed: string[] = [];
  readonly #generated: number[] = [];
  #workerId: string;
  #migrations = 0;
  #inner: Delivery;
  /** The request-end was handed on (or the stream ended or failed): later calls change nothing. */
  #over = false;
  #stopped = false;

  constructor(
    router: Router,
    request: GenerateRequest,
    first: RoutedCall,
    options: MigrationOptions,
    sink: StreamSink<GenerateResponse>,
  ) {
    this.#router = router;
    this.#request = request;
    this.#options = options;
    this.#down = sink;
    this.#workerId = first.workerId;
    this.#inner = first.open(this);
  }

  get holding(): Promise<void> | undefined {
    return this.#down.holding;
  }

  push(item: GenerateResponse): void {
    if (this.#over || this.#stopped) return;
    if (item.type === "token-delta") {
      for (const token of item.tokenIds) this.#generated.push(token);
      this.#down.push(item);
      return;
    }
    this.#over = true;
    this.#down.push({ ...item, promptTokens: this.#request.tokenIds.length, completionTokens: this.#generated.length });
    this.#down.end();
  }

  end(): void {
    if (this.#over || this.#stopped) return;
    this.#over = true;
    this.#down.end();
  }

  fail(error: unknown): void {
    if (this.#over || this.#stopped) return;
    const remaining = this.#request.maxTokens - this.#generated.length;
    const movable = isArmatureError(error) && error.retryable && !this.#options.signal.aborted;
    if (!movable || this.#migrations >= this.#options.limit || remaining <= 0) {
      this.#over = true;
      this.#down.fail(error);
      return;
    }
    void this.#moveOn(remaining);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (!this.#over) await this.#inner.stop();
  }

  /** Routes the rest of the request to another worker and delivers its stream into this one. */
  async #moveOn(remaining: number): Promise<void> {
    this.#migrations++;
    this.#failed.push(this.#workerId);
    const from = this.#workerId;
    const options = this.#options;
    let call: RoutedCall;
    try {
      call = await this.#router.route(
        { ...this.#request, tokenIds: [...this.#request.tokenIds, ...this.#generated], maxTokens: remaining },
        { signal: options.signal, overrides: options.overrides, excludeWorkerIds: this.#failed, trace: options.trace },
      );
    } catch (error) {
      if (this.#stopped) return;
      this.#over = true;
      this.#down.fail(error);
      return;
    }
    this.#workerId = call.workerId;
    this.#inner = call.open(this);
    // Stopped while the new worker was chosen: its call is opened only to be stopped (its booking freed).
    if (this.#stopped) await this.#inner.stop();
    else options.onMigrate?.(from, call.workerId, this.#generated.length);
  }
}
