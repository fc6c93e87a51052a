import { ArmatureError } from "../protocol/index.js";
import type { Clock } from "../runtime/index.js";

/**
 * The signal a worker serves one call under: the caller's, and when the call carries a deadline,
 * one that also aborts with `REQUEST_TIMEOUT` after `ms` on `clock` (work nobody waits for any more
 * stops even if the cancellation is lost on the way). One controller, one listener and one timer;
 * `clear` drops both when the call ends.
 */
export function callSignal(
  clock: Clock,
  callerSignal: AbortSignal,
  ms: number | undefined,
): { signal: AbortSignal; clear: () => void } {
  if (ms === undefined) return { signal: callerSignal, clear: () => {} };
  const controller = new AbortController();
  const onCallerAbort = (): void => controller.abort(callerSignal.reason);
  if (callerSignal.aborted) onCallerAbort();
  else callerSignal.addEventListener("abort", onCallerAbort, { once: true });
  const cancelTimer = clock.timer(ms, () =>
    controller.abort(new ArmatureError("REQUEST_TIMEOUT", `the request's deadline of ${ms} ms passed on the worker`)),
  );
  return {
    signal: controller.signal,
    clear: () => {
      cancelTimer();
      callerSignal.removeEventListener("abort", onCallerAbort);
    },
  };
}
