import cluster, { type Worker as ClusterWorker } from "node:cluster";
import type { Logger } from "../observability/index.js";
import { untilSignal } from "./signals.js";

/** What a frontend process tells its supervisor, and what the supervisor tells it. */
type ToSupervisor = { readonly type: "listening"; readonly url: string; readonly frontendId: string };
type ToFrontend = { readonly type: "drain" };

/** How long a drain may take before the supervisor stops waiting (the 30 s grace and then some). */
const DRAIN_LIMIT_MS = 45_000;
/** A frontend process that dies sooner than this after its start is not restarted (it would only die again). */
const MIN_LIFETIME_MS = 10_000;

/** Whether this process is one of `--frontend-processes`' HTTP processes (a cluster worker). */
export function isFrontendProcess(): boolean {
  return cluster.isWorker;
}

/**
 * `armature frontend --frontend-processes N`: this process serves no HTTP itself; it starts N copies
 * of the command (node:cluster), which share the listening port — the kernel hands each new
 * connection to one of them in turn — and each runs its own router replica, kept in sync with the
 * others over the event plane as any replicas are. A signal here drains them all; a process that
 * dies while serving is restarted. Resolves with the exit status.
 */
export async function superviseFrontendProcesses(count: number, out: (t: string) => void, logger: Logger): Promise<number> {
  const log = logger.child({ component: "frontend-processes" });
  const startedAt = new Map<ClusterWorker, number>();
  let draining = false;
  const fork = (): Promise<ToSupervisor> => {
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
    return new Promise((resolve, reject) => {
      worker.on("message", (message: ToSupervisor) => {
        if (message?.type === "listening") resolve(message);
      });
      worker.once("exit", (code, signal) => {
        reject(new Error(`a frontend process exited before it listened (${signal ?? code})`));
      });
    });
  };
  cluster.on("exit", (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    if (draining) return;
    if (lived < MIN_LIFETIME_MS) {
      log.error({ pid: worker.process.pid, code, signal }, "a frontend process died soon after its start; not restarted");
      return;
    }
    log.error({ pid: worker.process.pid, code, signal }, "a frontend process died; starting another");
    fork().catch((error: unknown) => log.error({ err: error }, "the replacement frontend process failed to start"));
  });
  let listening: ToSupervisor[];
  try {
    listening = await Promise.all(Array.from({ length: count }, fork));
  } catch (error) {
    draining = true;
    await stopAll(Object.values(cluster.workers ?? {}));
    throw error;
  }
  const url = listening[0]?.url ?? "";
  out(`armature frontend (${count} processes: ${listening.map((l) => l.frontendId).join(", ")}) at ${url}/v1\n`);
  await untilSignal(logger);
  draining = true;
  const codes = await stopAll(Object.values(cluster.workers ?? {}));
  out("armature frontend stopped\n");
  return codes.every((code) => code === 0) ? 0 : 1;
}

/** Tells each frontend process to drain and waits for its exit codes (killing any that overstay). */
async function stopAll(workers: readonly (ClusterWorker | undefined)[]): Promise<(number | null)[]> {
  return Promise.all(
    workers.map((worker) => {
      if (!worker || worker.isDead()) return Promise.resolve(worker?.process.exitCode ?? 0);
      return new Promise<number | null>((resolve) => {
        const limit = setTimeout(() => worker.process.kill("SIGKILL"), DRAIN_LIMIT_MS);
        worker.once("exit", (code) => {
          clearTimeout(limit);
          resolve(code);
        });
        if (worker.isConnected()) worker.send({ type: "drain" } satisfies ToFrontend);
        else worker.process.kill("SIGTERM");
      });
    }),
  );
}

/**
 * In a frontend process: tells the supervisor where it listens, then resolves when the supervisor
 * says drain or goes away. Signals are the supervisor's to handle: a Ctrl-C reaches the whole
 * process group, and the drain order follows from the supervisor.
 */
export function reportListeningThenAwaitDrain(url: string, frontendId: string): Promise<void> {
  const ignore = (): void => {};
  process.on("SIGINT", ignore);
  process.on("SIGTERM", ignore);
  process.send?.({ type: "listening", url, frontendId } satisfies ToSupervisor);
  return new Promise<void>((resolve) => {
    const done = (): void => {
      process.off("message", onMessage);
      process.off("disconnect", done);
      resolve();
    };
    const onMessage = (message: ToFrontend): void => {
      if (message?.type === "drain") done();
    };
    process.on("message", onMessage);
    process.once("disconnect", done);
  });
}
