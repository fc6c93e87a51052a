import type { Logger } from "../observability/index.js";
import type { InvalidMessageListener } from "../runtime/index.js";

/**
 * Last-resort handlers for a serving process: a promise rejection or exception nothing caught is
 * logged with its stack and the process keeps serving (every plane message is checked before use,
 * so what reaches here is a defect to fix, not an attacker's lever). Returns a function that
 * removes them.
 */
export function installLastResortHandlers(logger: Logger): () => void {
  const log = logger.child({ component: "process" });
  const onRejection = (reason: unknown): void => {
    log.error(
      { err: reason },
      "a promise rejection was not handled; the process keeps serving. Please report this with the stack",
    );
  };
  const onException = (error: Error): void => {
    log.error({ err: error }, "an exception was not caught; the process keeps serving. Please report this with the stack");
  };
  process.on("unhandledRejection", onRejection);
  process.on("uncaughtException", onException);
  return () => {
    process.off("unhandledRejection", onRejection);
    process.off("uncaughtException", onException);
  };
}

/**
 * Logs malformed plane messages: the first of each kind at once, then at most one line per kind
 * every `everyMs` with how many were dropped meanwhile, so a flood cannot flood the log.
 */
export function invalidMessageLogger(logger: Logger, everyMs = 10_000): InvalidMessageListener {
  const log = logger.child({ component: "planes" });
  const last = new Map<string, { at: number; suppressed: number }>();
  return (kind, subject, error) => {
    const now = Date.now();
    const seen = last.get(kind);
    if (seen && now - seen.at < everyMs) {
      seen.suppressed++;
      return;
    }
    last.set(kind, { at: now, suppressed: 0 });
    log.warn(
      { kind, subject, problem: (error as Error)?.message ?? String(error), droppedSinceLastLine: seen?.suppressed ?? 0 },
      "dropped a malformed message; is every process of this deployment the same armature version?",
    );
  };
}
