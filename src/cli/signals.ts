import type { Logger } from "../observability/index.js";

/** Resolves on the first SIGINT or SIGTERM; the caller then drains and exits 0. */
export function untilSignal(logger: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      logger.info({ signal }, "draining");
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
