import { ArmatureError } from "../protocol/index.js";
import type { Clock } from "../runtime/index.js";

/** A signal that aborts with `REQUEST_TIMEOUT` after `ms` on `clock`, and `clear` to drop its timer early. */
export function deadlineAfter(clock: Clock, ms: number): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const cleared = new AbortController();
  clock.sleep(ms, cleared.signal).then(
    () => controller.abort(new ArmatureError("REQUEST_TIMEOUT", `the request's deadline of ${ms} ms passed on the worker`)),
    () => undefined,
  );
  return { signal: controller.signal, clear: () => cleared.abort() };
}
