import { createLogger } from "../observability/index.js";
import { ArmatureError } from "../protocol/index.js";
import { startEmbeddedDeployment } from "./embedded-deployment.js";
import { refuseMetricsPort } from "./metrics-endpoint.js";
import { resolveServeOptions } from "./serve-options.js";
import { untilSignal } from "./signals.js";

/** `armature serve`: frontend, router and workers in one process, until a signal stops them. */
export async function serveCommand(argv: readonly string[]): Promise<number> {
  const options = resolveServeOptions(argv);
  refuseMetricsPort("serve", options.metricsPort);
  if (options.frontendProcesses > 1) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--frontend-processes is for armature frontend: armature serve keeps its workers in its one process; run the workers with armature worker (or armature up) and the frontends with armature frontend --frontend-processes N on --bus and --discovery",
    );
  }
  const logger = createLogger({ level: options.logLevel });
  const deployment = await startEmbeddedDeployment(options, logger);
  process.stdout.write(
    `armature serving ${deployment.modelNames.length > 1 ? `models ${deployment.modelNames.map((n) => `'${n}'`).join(", ")}` : `model '${deployment.modelName}'`} (${options.engine}, ${describeWorkers(deployment.workers.map((w) => w.card.role))}) at ${deployment.frontend.url}/v1\n`,
  );
  await untilSignal(logger);
  await deployment.close();
  process.stdout.write("armature stopped\n");
  return 0;
}

/** "2 workers", or "1 prefill + 2 decode workers". */
function describeWorkers(roles: readonly string[]): string {
  const count = (role: string): number => roles.filter((r) => r === role).length;
  const plural = roles.length > 1 ? "s" : "";
  if (count("prefill") === 0) return `${roles.length} worker${plural}`;
  return `${count("prefill")} prefill + ${count("decode")} decode worker${plural}`;
}
