import { ArmatureError } from "../protocol/index.js";
import type { Clock, RequestContext } from "../runtime/index.js";

/**
 * The signal a worker serves one call under: the caller's, and when the call carries a deadline,
 * one that also aborts with `REQUEST_TIMEOUT` after `ms` on `clock` (work nobody waits for any more
 * stops even if the cancellation is lost on the way). Where the plane lets the handler cancel its
 * call (`context.cancel`, in one process) the timer aborts the call's own signal: no controller is
 * made. Otherwise one controller, one listener and one timer. `clear` drops them when the call ends.
 */
export function callSignal(
  clock: Clock,
  context: Pick<RequestContext, "signal" | "cancel">,
  ms: number | undefined,
): { signal: AbortSignal; clear: () => void } {
  const callerSignal = context.signal;
  if (ms === undefined) return { signal: callerSignal, clear: () => {} };
  const timeout = (): ArmatureError =>
    new ArmatureError("REQUEST_TIMEOUT", `the request's deadline of ${ms} ms passed on the worker`);
  const cancel = context.cancel;
  if (cancel) return { signal: callerSignal, clear: clock.timer(ms, () => cancel(timeout())) };
  const controller = new AbortController();
  const onCallerAbort = (): void => controller.abort(callerSignal.reason);
  if (callerSignal.aborted) onCallerAbort();
  else callerSignal.addEventListener("abort", onCallerAbort, { once: true });
  const cancelTimer = clock.timer(ms, () => controller.abort(timeout()));
  return {
    signal: controller.signal,
    clear: () => {
      cancelTimer();
      callerSignal.removeEventListener("abort", onCallerAbort);
    },
  };
}
