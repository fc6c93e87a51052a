import type { Logger } from "../observability/index.js";

/** How long draining may take after the first signal before the process exits anyway. */
const SHUTDOWN_LIMIT_MS = 45_000;

/**
 * Resolves on the first SIGINT or SIGTERM; the caller then drains and exits 0. A second signal, or
 * a drain still running after 45 s (the 30 s grace and then some), ends the process at once with
 * status 1, saying so: a stuck close never leaves a process that will not die.
 */
export function untilSignal(logger: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      logger.info({ signal }, "draining");
      const force = (reason: string): void => {
        process.stderr.write(`armature: ${reason}; exiting without finishing the drain\n`);
        process.exit(1);
      };
      process.once("SIGINT", () => force("a second signal arrived"));
      process.once("SIGTERM", () => force("a second signal arrived"));
      setTimeout(() => force(`the drain took longer than ${SHUTDOWN_LIMIT_MS / 1000} s`), SHUTDOWN_LIMIT_MS).unref();
      resolve();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

/** Calls `handler` on every SIGHUP until the returned function is called; then SIGHUP ends the process again. */
export function onHangup(handler: () => void): () => void {
  process.on("SIGHUP", handler);
  return () => {
    process.off("SIGHUP", handler);
  };
}
