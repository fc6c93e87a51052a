import { nowMs, type Tracing } from "../observability/index.js";
import type { GenerateRequest, GenerateResponse, RequestEnd } from "../protocol/index.js";

/**
 * Passes a worker's response stream through and, when it ends (or fails), records the request's
 * worker spans under the trace context it came with:
 * - an aggregated request: `prefill` (arrival to the first token) and `decode` (first token to end);
 * - a disaggregated prefill: `prefill` (arrival to the handoff);
 * - a disaggregated decode: `transfer` (the KV pull, from arrival, as long as the transfer took),
 *   then `decode`; or, when the KV never came and the worker prefilled locally, `prefill` and `decode`.
 * Spans are made at the end with the times seen, so nothing is traced per token.
 */
export async function* withWorkerSpans(
  tracing: Tracing,
  workerId: string,
  request: GenerateRequest,
  stream: AsyncIterable<GenerateResponse>,
): AsyncGenerator<GenerateResponse> {
  const receivedAt = nowMs();
  let firstTokenAt: number | undefined;
  let end: RequestEnd | undefined;
  let failure: unknown;
  let recorded = false;
  const record = (): void => {
    if (recorded) return;
    recorded = true;
    recordSpans(tracing, workerId, request, { receivedAt, firstTokenAt, endedAt: nowMs(), end, failure });
  };
  try {
    for await (const response of stream) {
      if (response.type === "token-delta") firstTokenAt ??= nowMs();
      else {
        end = response;
        // Now, not when the stream closes: a caller may never resume the stream after its end.
        record();
      }
      yield response;
    }
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    record();
  }
}

interface Seen {
  readonly receivedAt: number;
  readonly firstTokenAt: number | undefined;
  readonly endedAt: number;
  readonly end: RequestEnd | undefined;
  readonly failure: unknown;
}

function recordSpans(tracing: Tracing, workerId: string, request: GenerateRequest, seen: Seen): void {
  const parent = request.traceContext;
  const { receivedAt, endedAt, end } = seen;
  const phase = request.disaggregation?.phase ?? "aggregated";
  const failure = seen.failure ?? (end?.finishReason === "error" ? (end.error?.message ?? "the engine failed") : undefined);
  const span = (name: string, from: number, to: number, attributes: Record<string, string | number | boolean | undefined>) => {
    const made = tracing.startSpan(name, {
      parent,
      kind: "server",
      startTime: from,
      attributes: { "armature.worker_id": workerId, "armature.phase": phase, ...attributes },
    });
    if (failure !== undefined) made.fail(failure);
    made.end(Math.max(from, to));
  };
  const prefillAttributes = {
    "armature.request_id": request.requestId,
    "gen_ai.usage.input_tokens": request.tokenIds.length,
    "armature.cached_tokens": end?.cachedTokens,
  };
  if (phase === "prefill") {
    span("prefill", receivedAt, endedAt, {
      ...prefillAttributes,
      "armature.handoff_bytes": end?.kvHandoff?.bytes,
      "armature.handoff_from_token": end?.kvHandoff?.fromToken,
    });
    return;
  }
  const firstTokenAt = seen.firstTokenAt ?? endedAt;
  if (phase === "decode" && end?.kvTransfer) {
    const transferredAt = Math.min(receivedAt + end.kvTransfer.ms, firstTokenAt);
    span("transfer", receivedAt, transferredAt, {
      "armature.transfer.backend": end.kvTransfer.backend,
      "armature.transfer.bytes": end.kvTransfer.bytes,
      "armature.transfer.saved_bytes": end.kvTransfer.savedBytes,
      "armature.prefill_worker_id":
        request.disaggregation?.phase === "decode" ? request.disaggregation.handoff.prefillWorkerId : undefined,
    });
  } else {
    span("prefill", receivedAt, firstTokenAt, {
      ...prefillAttributes,
      "armature.prefilled_locally": phase === "decode" ? true : undefined,
    });
  }
  if (seen.firstTokenAt === undefined && !end) return;
  span("decode", firstTokenAt, endedAt, {
    "gen_ai.usage.output_tokens": end?.completionTokens,
    "armature.finish_reason": end?.finishReason,
  });
}
