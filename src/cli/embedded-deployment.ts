import type { Frontend } from "../frontend/index.js";
import { type Logger, PrometheusMeter } from "../observability/index.js";
import { createEmbeddedRuntime, type Runtime } from "../runtime/index.js";
import type { WorkerHost } from "../worker/index.js";
import { type EmbeddedPlanner, startEmbeddedPlanner } from "./embedded-planner.js";
import { readHttpsCredentials } from "./https-credentials.js";
import { invalidMessageLogger } from "./process-guards.js";
import type { ServeOptions } from "./serve-options.js";
import { startFrontend } from "./start-frontend.js";
import { startWorkers } from "./start-workers.js";

/** Frontend, router and workers in one process on the embedded runtime. */
export interface EmbeddedDeployment {
  readonly frontend: Frontend;
  readonly workers: readonly WorkerHost[];
  readonly runtime: Runtime;
  readonly modelName: string;
  /** Every model served (several with repeated `--model`). */
  readonly modelNames: readonly string[];
  /** Drains HTTP, then workers, then the runtime. */
  close(graceMs?: number): Promise<void>;
}

export async function startEmbeddedDeployment(options: ServeOptions, logger: Logger): Promise<EmbeddedDeployment> {
  const runtime = createEmbeddedRuntime({
    onEventHandlerError: (error, subject) => logger.error({ err: error, subject }, "event handler failed"),
    onInvalidMessage: invalidMessageLogger(logger),
    inProcess: true,
  });
  // One /metrics for the process: the frontend's, the router's and the workers' block managers'.
  const meter = new PrometheusMeter();
  let started: Awaited<ReturnType<typeof startWorkers>>;
  try {
    // Bad TLS files fail the start before models load (the frontend reads them again to serve).
    if (options.tls) readHttpsCredentials(options.tls);
    started = await startWorkers(options, runtime, logger, meter);
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const { workers, modelName, modelNames } = started;
  let stack: Awaited<ReturnType<typeof startFrontend>>;
  let planner: EmbeddedPlanner | undefined;
  try {
    planner = await startEmbeddedPlanner(options, runtime, logger, meter, started);
    stack = await startFrontend(
      options,
      runtime,
      logger,
      workers.map((w) => w.card),
      "embedded",
      false,
      meter,
      planner?.hooks,
    );
  } catch (error) {
    // The port is taken, say: nothing may keep the process alive after this.
    await planner?.close();
    await Promise.all([...workers, ...(planner?.added() ?? [])].map((w) => w.close(0)));
    await started.tracing.close();
    await runtime.close();
    throw error;
  }
  return {
    frontend: stack.frontend,
    workers,
    runtime,
    modelName,
    modelNames,
    async close(graceMs = 30_000) {
      // The planner stops first, so it starts and drains no worker while the deployment closes.
      await planner?.close();
      await stack.close(graceMs);
      await Promise.all([...workers, ...(planner?.added() ?? [])].map((w) => w.close(graceMs)));
      await started.tracing.close();
      await runtime.close();
    },
  };
}
