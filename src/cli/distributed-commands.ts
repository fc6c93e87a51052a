import { randomUUID } from "node:crypto";
import { createLogger, type Logger, PrometheusMeter } from "../observability/index.js";
import { ArmatureError, type ModelCard } from "../protocol/index.js";
import { ActiveLoad, ApproximateIndex, KvIndexer, kvPolicy, serveRouteQueries, WorkerSet } from "../router/index.js";
import { connectDistributedRuntime, type Runtime, redactUrl } from "../runtime/index.js";
import { isFrontendProcess, reportListeningThenAwaitDrain, superviseFrontendProcesses } from "./frontend-processes.js";
import { refuseMetricsPort, startMetricsEndpoint } from "./metrics-endpoint.js";
import { invalidMessageLogger } from "./process-guards.js";
import { resolveServeOptions, type ServeOptions } from "./serve-options.js";
import { untilSignal } from "./signals.js";
import { startFrontend } from "./start-frontend.js";

/** The runtime of a process of a distributed deployment, on `--bus` and `--discovery`. */
export async function connect(options: ServeOptions, logger: Logger): Promise<Runtime> {
  if (!options.bus || !options.discovery) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "a separate worker, frontend, router or planner needs --bus nats://HOST:PORT and --discovery etcd://HOST:PORT (ARMATURE_BUS, ARMATURE_DISCOVERY); for one process use armature serve",
    );
  }
  return connectDistributedRuntime({
    bus: options.bus,
    busSecurity: options.busSecurity,
    discovery: options.discovery,
    discoverySecurity: options.discoverySecurity,
    ...(options.progressTimeoutMs !== undefined ? { requestPlane: { progressTimeoutMs: options.progressTimeoutMs } } : {}),
    durableKvEvents: options.durableKvEvents,
    onError: (error, where) => logger.warn({ err: error, where }, "runtime error"),
    onInvalidMessage: invalidMessageLogger(logger),
  });
}

/** `armature worker`: engines registered in etcd, served over NATS, until SIGINT/SIGTERM. */
/**
 * Flags of the frontend's router (its KV policy's cost, admission queue) and Batch API, which a
 * worker process has no use for:
 * given on `armature worker`'s command line they are refused by name (their environment twins are
 * not, as a cluster's processes may share one environment).
 */
const FRONTEND_ONLY_FLAGS = [
  "batch-dir",
  "batch-concurrency",
  "batch-max-file-bytes",
  "priority-reserve",
  "busy-sequences-frac",
  "busy-decode-blocks",
  "busy-prefill-frac",
  "router-queue-size",
  "kv-overlap-weight",
  "kv-exclusive-factor",
  "router-temperature",
  "lower-tier-weight",
  "grpc-port",
] as const;

/** Flags that set what a worker's engine runs (its engine server, its adapters), which a frontend or router does not drive. */
const SIDECAR_ONLY_FLAGS = [
  "lora",
  "max-loras",
  "engine-url",
  "prefill-engine-url",
  "tokenizer",
  "kv-events-endpoint",
  "kv-events-replay-endpoint",
  "engine-wait",
] as const;

function firstGiven(argv: readonly string[], flags: readonly string[]): string | undefined {
  return flags.find((flag) => argv.some((arg) => arg === `--${flag}` || arg.startsWith(`--${flag}=`)));
}

/**
 * Throws `CONFIG_INVALID` naming the first engine-server flag on a frontend's or router's command
 * line: they find the workers in discovery, and the tokenizer in the workers' cards.
 */
export function refuseSidecarFlags(command: "frontend" | "router", argv: readonly string[]): void {
  const given = firstGiven(argv, SIDECAR_ONLY_FLAGS);
  if (given !== undefined) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--${given} is for armature worker (or serve): it sets what a worker's engine runs, which armature ${command} does not run`,
    );
  }
}

/** Throws `CONFIG_INVALID` naming the first frontend-only flag on a worker's command line. */
export function refuseFrontendFlags(argv: readonly string[]): void {
  const given = firstGiven(argv, FRONTEND_ONLY_FLAGS);
  if (given !== undefined) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--${given} is for armature frontend (or serve): it sets the router or the HTTP API, which armature worker does not run`,
    );
  }
}

export async function workerCommand(argv: readonly string[], out: (t: string) => void): Promise<number> {
  refuseFrontendFlags(argv);
  const options = resolveServeOptions(argv);
  const logger = createLogger({ level: options.logLevel });
  const runtime = await connect(options, logger);
  const meter = new PrometheusMeter();
  // The port first: a taken one fails the start before any worker registers.
  const metrics =
    options.metricsPort === undefined
      ? undefined
      : await startMetricsEndpoint({
          host: options.host,
          port: options.metricsPort,
          meter,
          invalidMessages: runtime.invalidMessages,
        });
  // Loaded here: engines (llama.cpp's bindings among them) are a worker's, not a frontend's or a router's.
  const { startWorkers } = await import("./start-workers.js");
  const { workers, modelName, tracing } = await startWorkers(options, runtime, logger, meter);
  out(
    `armature worker ${workers.map((w) => w.id).join(", ")} serving '${modelName}' (${options.engine}) on ${redactUrl(options.bus ?? "")}${metrics ? `, metrics at ${metrics.url}/metrics` : ""}\n`,
  );
  await untilSignal(logger);
  await Promise.all(workers.map((w) => w.close()));
  await metrics?.close();
  await tracing.close();
  await runtime.close();
  out("armature worker stopped\n");
  return 0;
}

/**
 * `armature frontend`: the OpenAI HTTP API and the router, finding workers in etcd. With
 * `--frontend-processes N` this process supervises N such processes sharing the port.
 */
export async function frontendCommand(argv: readonly string[], out: (t: string) => void): Promise<number> {
  refuseSidecarFlags("frontend", argv);
  const options = resolveServeOptions(argv);
  const logger = createLogger({ level: options.logLevel });
  refuseMetricsPort("frontend", options.metricsPort);
  if (options.frontendProcesses > 1 && !isFrontendProcess()) {
    return superviseFrontendProcesses(options.frontendProcesses, out, logger);
  }
  const runtime = await connect(options, logger);
  const cards = await waitForWorkers(runtime, logger);
  const frontendId = `frontend-${randomUUID().slice(0, 8)}`;
  const stack = await startFrontend(options, runtime, logger, cards, frontendId);
  if (isFrontendProcess()) {
    await reportListeningThenAwaitDrain(stack.frontend.url, frontendId);
  } else {
    out(`armature frontend (${cards.length} worker${cards.length === 1 ? "" : "s"} found) at ${stack.frontend.url}/v1\n`);
    await untilSignal(logger);
  }
  await stack.close();
  await runtime.close();
  if (isFrontendProcess()) process.disconnect();
  else out("armature frontend stopped\n");
  return 0;
}

/** The router's KV block size comes from the workers' cards: wait (up to 60 s) for the first one. */
async function waitForWorkers(runtime: Runtime, logger: Logger): Promise<ModelCard[]> {
  const deadline = Date.now() + 60_000;
  let warned = false;
  for (;;) {
    const instances = await runtime.discovery.list();
    if (instances.length > 0 || Date.now() > deadline) return instances.map((i) => i.card);
    if (!warned) {
      logger.info("waiting for a worker to register (armature worker --discovery …)");
      warned = true;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * `armature router`: the KV index and routing policy as a service on the request plane. It hears
 * every worker's KV events and every frontend's bookings (event plane) and answers route queries
 * from frontends started with `--router remote`; several routers share the work as a queue group.
 */
export async function routerCommand(argv: readonly string[], out: (t: string) => void): Promise<number> {
  refuseSidecarFlags("router", argv);
  const options = resolveServeOptions(argv);
  refuseMetricsPort("router", options.metricsPort);
  const logger = createLogger({ level: options.logLevel });
  const runtime = await connect(options, logger);
  const cards = await waitForWorkers(runtime, logger);
  const blockSize = options.blockSize ?? cards[0]?.blockSize ?? 16;
  const routerId = `router-${randomUUID().slice(0, 8)}`;
  const workers = new WorkerSet(runtime, logger);
  const activeLoad = new ActiveLoad({
    routerId,
    clock: runtime.clock,
    events: runtime.events,
    invalidMessages: runtime.invalidMessages,
  });
  const indexer = options.kvEvents ? new KvIndexer({ runtime, logger, blockSize }) : undefined;
  const index = indexer ?? new ApproximateIndex({ clock: runtime.clock, blockSize });
  await indexer?.ready;
  const registration = await serveRouteQueries(
    runtime,
    kvPolicy({
      indexer: index,
      blockSize,
      activeLoad,
      overlapWeight: options.kvOverlapWeight,
      exclusiveFactor: options.kvExclusiveFactor,
      temperature: options.routerTemperature,
      lowerTierWeight: options.lowerTierWeight,
    }),
    workers,
  );
  out(
    `armature router ${routerId} (kv${indexer ? "" : ", approximate"}, block size ${blockSize}) on ${redactUrl(options.bus ?? "")}\n`,
  );
  await untilSignal(logger);
  await registration.close();
  indexer?.close();
  activeLoad.close();
  workers.close();
  await runtime.close();
  out("armature router stopped\n");
  return 0;
}
