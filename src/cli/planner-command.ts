import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { createLogger, type Logger, PrometheusMeter } from "../observability/index.js";
import {
  KubernetesConnector,
  LocalConnector,
  type LocalWorkerExit,
  Planner,
  PlannerLease,
  type PlannerSignals,
  type ScalingConnector,
  TrafficWindow,
} from "../planner/index.js";
import { ArmatureError, isArmatureError, subjects, trafficReportSchema, type WorkerRole } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import { connect } from "./distributed-commands.js";
import { type PlannerCommandOptions, resolvePlannerCommandOptions } from "./planner-command-options.js";
import { installLastResortHandlers } from "./process-guards.js";
import { untilSignal } from "./signals.js";

export { PLANNER_USAGE } from "./planner-command-options.js";

/**
 * How long a worker the planner stops may drain before SIGKILL: under the 45 s after which this
 * process gives up its own shutdown, so every worker is accounted for before it exits.
 */
const WORKER_STOP_TIMEOUT_MS = 40_000;

/**
 * `armature planner`: the SLA planner as its own process. It reads every frontend's traffic
 * reports from the event plane, runs the load loop (and in `sla` mode the throughput loop), and
 * changes the pools through a connector: `local` starts and drains `armature worker` processes,
 * `kubernetes` patches Deployments. Its state and metrics are on a small HTTP port. On SIGINT or
 * SIGTERM it stops deciding, then drains the workers it started, and exits 0.
 */
export async function plannerCommand(argv: readonly string[], out: (t: string) => void): Promise<number> {
  const options = resolvePlannerCommandOptions(argv);
  const logger = createLogger({ level: options.serve.logLevel });
  const removeGuards = installLastResortHandlers(logger);
  try {
    const runtime = await connect(options.serve, logger);
    let running: Awaited<ReturnType<typeof startPlannerProcess>>;
    try {
      running = await startPlannerProcess(options, runtime, logger, out);
    } catch (error) {
      await runtime.close();
      throw error;
    }
    const { planner } = options;
    out(
      `armature planner (${planner.mode}, ${planner.layout}, ${options.connector.kind} connector${planner.advisory ? ", advisory" : ""}${running.acting() ? "" : ", standing by: another planner acts"}) at ${running.url}/v1/planner\n`,
    );
    await untilSignal(logger);
    await running.close();
    await runtime.close();
    out("armature planner stopped\n");
    return 0;
  } finally {
    removeGuards();
  }
}

/** The planner, its traffic subscription, its connector and its HTTP port, started on a runtime. */
async function startPlannerProcess(
  options: PlannerCommandOptions,
  runtime: Runtime,
  logger: Logger,
  out: (t: string) => void,
): Promise<{ url: string; acting: () => boolean; close(): Promise<void> }> {
  const meter = new PrometheusMeter();
  const compiled = options.planner;
  const clock = runtime.clock;
  const reports = meter.counter("planner_traffic_reports_total", "Frontends' traffic reports the planner read");
  const reportedRequests = meter.counter("planner_traffic_requests_total", "Finished requests the traffic reports summed");
  const dropped = meter.gauge(
    "plane_messages_dropped",
    "Malformed messages from the event plane dropped since start, by the kind they claimed",
    ["kind"],
  );
  // Latencies of the last six load-loop periods, as in armature serve --planner.
  const traffic = new TrafficWindow(clock.now(), 6 * compiled.loadIntervalSeconds * 1000);
  const unsubscribe = runtime.events.subscribe(subjects.allTrafficReports, (payload, subject) => {
    const report = runtime.invalidMessages.accept("traffic-report", trafficReportSchema, payload, subject);
    if (!report) return;
    traffic.recordSummary(clock.now(), report);
    reports.inc();
    reportedRequests.inc({}, report.requests);
  });
  let connector: ScalingConnector;
  try {
    connector = await createConnector(options, logger, out);
  } catch (error) {
    unsubscribe();
    throw error;
  }
  const local = connector instanceof LocalConnector ? connector : undefined;
  // Each worker's role, from discovery: the load loop judges each pool's workers one by one.
  const workerRoles = new Map<string, WorkerRole>();
  const unwatch = runtime.discovery.watch((event) => {
    if (event.type === "instance-added") workerRoles.set(event.instance.id, event.instance.role);
    else workerRoles.delete(event.instanceId);
  });
  const poolWorkers = (pool: string): string[] => [...workerRoles].filter(([, role]) => role === pool).map(([id]) => id);
  const signals: PlannerSignals = {
    takeInterval: (now) => traffic.takeInterval(now),
    // One estimate per worker of the pool from the reports' per-worker sums (a worker they do not
    // name has room); from frontends that send no per-worker sums, the pool-wide mean. No requests
    // in the window reads as no load, so an idle deployment shrinks to --min-workers.
    estimates: (pool) =>
      traffic.measuredPerWorker(clock.now(), poolWorkers(pool)) ?? [traffic.measured(clock.now()) ?? { ttftMs: 0, itlMs: 0 }],
  };
  let planner: Planner | undefined;
  let server: Server | undefined;
  // One planner of a deployment acts (it holds the `planner` claim in etcd); others stand by and
  // take over when it dies, adopting the workers it started on this machine.
  const holder = `${hostname()}/${process.pid}`;
  const lease = new PlannerLease({
    discovery: runtime.discovery,
    clock,
    holder,
    logger: logger.child({ component: "planner" }),
    onChange: async (acting) => {
      if (!acting || !local) return;
      const adopted = local.adopt(await runtime.discovery.list());
      if (adopted > 0) out(`armature planner: adopted ${adopted} worker${adopted === 1 ? "" : "s"} a previous planner started\n`);
      // Local pools start empty: give each its floor now rather than at the first load-loop tick.
      for (const role of options.roles) {
        if ((await local.replicas(role)).desired < compiled.minWorkers) await local.scale(role, compiled.minWorkers);
      }
    },
  });
  const close = async (): Promise<void> => {
    // Stop deciding first, so no worker starts while they drain; the claim is given up only once
    // they have, so a standby never adopts a draining worker; then the port.
    await planner?.close();
    await connector.close();
    await lease.close();
    unsubscribe();
    unwatch();
    if (server) await closeServer(server);
  };
  const state = async (current: Planner): Promise<unknown> => ({
    ...current.state(),
    connector: options.connector.kind,
    acting: lease.acting,
    holder: await lease.holder().catch(() => undefined),
    ...(local ? { workers: options.roles.flatMap((role) => local.workers(role)) } : {}),
  });
  try {
    // The port first: a taken one fails the start before any worker runs.
    server = await listen(options, (req, res) => {
      if (req.method !== "GET") return send(res, 405, "text/plain", "only GET\n");
      if (req.url === "/v1/planner") {
        if (!planner) return send(res, 503, "text/plain", "starting\n");
        void state(planner).then((view) => send(res, 200, "application/json", JSON.stringify(view)));
        return;
      }
      if (req.url === "/metrics") {
        for (const [kind, count] of runtime.invalidMessages.counts) dropped.set({ kind }, count);
        void meter.registry.metrics().then(
          (text) => send(res, 200, meter.contentType, text),
          (error: unknown) => send(res, 500, "text/plain", `${(error as Error).message}\n`),
        );
        return;
      }
      send(res, 404, "text/plain", "GET /v1/planner or GET /metrics\n");
    });
    planner = Planner.start({
      options: compiled,
      clock,
      connector,
      signals,
      meter,
      logger: logger.child({ component: "planner" }),
      acting: () => lease.acting,
    });
    await lease.start();
  } catch (error) {
    await close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return { url: `http://${host}:${address.port}`, acting: () => lease.acting, close };
}

async function createConnector(
  options: PlannerCommandOptions,
  logger: Logger,
  out: (t: string) => void,
): Promise<ScalingConnector> {
  const choice = options.connector;
  if (choice.kind === "kubernetes") {
    try {
      return await KubernetesConnector.create({
        deployments: choice.deployments,
        ...(choice.namespace !== undefined ? { namespace: choice.namespace } : {}),
      });
    } catch (error) {
      // The client's own reason (TLS, a proxy, a refused connection) is what the operator fixes.
      const cause = (error as { cause?: unknown }).cause;
      if (!isArmatureError(error) || error.code !== "WORKER_UNAVAILABLE" || !(cause instanceof Error)) throw error;
      const reason = cause.message.slice(0, 200);
      throw new ArmatureError(error.code, `${error.message}: ${reason}; check KUBECONFIG and --k8s-namespace`, {
        cause: error,
      });
    }
  }
  return LocalConnector.create({
    workerArgs: choice.workerArgs,
    env: workerEnvironment(options),
    stopTimeoutMs: WORKER_STOP_TIMEOUT_MS,
    onLine: (line, worker) => out(`[${worker.name}] ${line}\n`),
    onExit: (exit) => out(`armature planner: ${describeExit(exit)}\n`),
    logger: logger.child({ component: "planner" }),
  });
}

/**
 * The workers reach NATS and etcd as the planner does: the URLs and credentials go through the
 * environment (`ARMATURE_*`), never argv, which `ps` shows to everyone.
 */
function workerEnvironment({ serve }: PlannerCommandOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ARMATURE_BUS: serve.bus, ARMATURE_DISCOVERY: serve.discovery };
  const set = (name: string, value: string | undefined): void => {
    if (value !== undefined) env[name] = value;
  };
  const bus = serve.busSecurity;
  set("ARMATURE_BUS_CREDS", bus.credsFile);
  set("ARMATURE_BUS_TOKEN", bus.token);
  set("ARMATURE_BUS_USER", bus.user);
  set("ARMATURE_BUS_PASSWORD", bus.password);
  set("ARMATURE_BUS_TLS_CA", bus.tlsCaFile);
  set("ARMATURE_BUS_TLS_CERT", bus.tlsCertFile);
  set("ARMATURE_BUS_TLS_KEY", bus.tlsKeyFile);
  const discovery = serve.discoverySecurity;
  set("ARMATURE_DISCOVERY_USER", discovery.user);
  set("ARMATURE_DISCOVERY_PASSWORD", discovery.password);
  set("ARMATURE_DISCOVERY_TLS_CA", discovery.tlsCaFile);
  set("ARMATURE_DISCOVERY_TLS_CERT", discovery.tlsCertFile);
  set("ARMATURE_DISCOVERY_TLS_KEY", discovery.tlsKeyFile);
  // The planner's own mode is no business of its workers.
  delete env.ARMATURE_PLANNER;
  return env;
}

function describeExit(exit: LocalWorkerExit): string {
  // An adopted worker is not this process's child: its exit status is not known.
  const how =
    exit.code !== null ? `exit ${exit.code}` : exit.signal !== null ? `signal ${exit.signal}` : "status unknown (adopted)";
  // A worker stopped before it was ready dies of the signal: it had nothing to drain.
  const why = exit.killed
    ? "killed after its drain deadline"
    : !exit.requested
      ? "exited by itself"
      : exit.code === 0
        ? "drained"
        : "stopped";
  return `worker ${exit.name} (pid ${exit.pid ?? "?"}) ${why}: ${how}`;
}

function listen(options: PlannerCommandOptions, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> {
  const server = createServer(handler);
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const taken = error.code === "EADDRINUSE";
      reject(
        new ArmatureError(
          "CONFIG_INVALID",
          taken
            ? `port ${options.port} on ${options.host} is already in use; choose another with --port, or 0 for a free one`
            : `the planner cannot listen on ${options.host}:${options.port} (${error.message}); check --host and --port`,
          { cause: error },
        ),
      );
    });
    server.listen(options.port, options.host, () => resolve(server));
  });
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { "content-type": contentType, "cache-control": "no-store" });
  res.end(body);
}
