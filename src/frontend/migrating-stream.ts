import type { RouteTrace } from "../observability/index.js";
import { type GenerateRequest, type GenerateResponse, isArmatureError } from "../protocol/index.js";
import type { RoutedCall, Router, RouterOverrides } from "../router/index.js";

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
 * The responses of a routed call, continued on another worker when the first fails mid-stream with
 * a retryable error (it died, drained or lost its connection): the new request carries the tokens
 * generated so far after the prompt and asks only for the rest, so the caller sees one stream
 * (Dynamo's request migration). Usage in the final `request-end` covers the whole request.
 */
export async function* migratingStream(
  router: Router,
  request: GenerateRequest,
  first: RoutedCall,
  options: MigrationOptions,
): AsyncGenerator<GenerateResponse> {
  const generated: number[] = [];
  const failed: string[] = [];
  let call = first;
  let migrations = 0;
  for (;;) {
    const iterator = call.stream[Symbol.asyncIterator]();
    let finished = false;
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) {
          finished = true;
          return;
        }
        const item = next.value;
        if (item.type === "token-delta") {
          generated.push(...item.tokenIds);
          yield item;
        } else {
          // Read the worker's stream to its end before handing the end on: a stream left open
          // here is cancelled by the `return()` below (in one process the worker's signal aborts,
          // over NATS a cancel is published), and the caller may stop reading at the end.
          try {
            finished = (await iterator.next()).done === true;
          } catch {
            // The request is complete: what its worker's stream did after its end changes nothing.
            finished = true;
          }
          yield { ...item, promptTokens: request.tokenIds.length, completionTokens: generated.length };
          return;
        }
      }
    } catch (error) {
      const remaining = request.maxTokens - generated.length;
      const movable = isArmatureError(error) && error.retryable && !options.signal.aborted;
      if (!movable || migrations >= options.limit || remaining <= 0) throw error;
      migrations++;
      failed.push(call.workerId);
      const from = call.workerId;
      call = await router.route(
        { ...request, tokenIds: [...request.tokenIds, ...generated], maxTokens: remaining },
        { signal: options.signal, overrides: options.overrides, excludeWorkerIds: failed, trace: options.trace },
      );
      options.onMigrate?.(from, call.workerId, generated.length);
    } finally {
      if (!finished) await iterator.return?.();
    }
  }
}
