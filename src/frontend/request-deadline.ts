import type { Logger } from "../observability/index.js";
import { ArmatureError } from "../protocol/index.js";

/**
 * The deadline of one request (`--request-timeout`, or its `x-armature-deadline-ms` when sooner): after `timeoutMs` from now, aborts `controller` with
 * `REQUEST_TIMEOUT` (cancelling the generation on the worker), says so in the log and calls
 * `onExpire` (a route closes what waits on a client that stopped reading). Returns the timer, for
 * `clearTimeout` when the request ends; undefined when there is no deadline.
 */
export function startRequestDeadline(
  controller: AbortController,
  timeoutMs: number | undefined,
  log: Logger,
  onExpire?: () => void,
): NodeJS.Timeout | undefined {
  if (timeoutMs === undefined) return undefined;
  return setTimeout(() => {
    controller.abort(
      new ArmatureError(
        "REQUEST_TIMEOUT",
        `the request took longer than its deadline of ${timeoutMs / 1000} s (this server's --request-timeout, or the client's x-armature-deadline-ms when sooner)`,
      ),
    );
    log.warn({ timeoutMs }, "request timed out; generation cancelled");
    onExpire?.();
  }, timeoutMs);
}
