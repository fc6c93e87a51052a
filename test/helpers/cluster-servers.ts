import { type EtcdServer, startEtcd } from "./etcd-server.js";
import { type NatsServer, startNatsServer } from "./nats-server.js";

/** A nats-server and an etcd on free loopback ports, and the flags that point armature at them. */
export interface ClusterServers {
  readonly nats: NatsServer;
  readonly etcd: EtcdServer;
  /** `--bus nats://… --discovery etcd://…` */
  readonly flags: readonly string[];
  stop(): Promise<void>;
}

export async function startClusterServers(options: { jetStreamDir?: string } = {}): Promise<ClusterServers> {
  const [nats, etcd] = await startSideBySide(
    () => startNatsServer(undefined, "127.0.0.1", options.jetStreamDir),
    () => startEtcd(),
  );
  return {
    nats,
    etcd,
    flags: ["--bus", nats.url, "--discovery", `etcd://${etcd.endpoint}`],
    stop: async () => {
      await Promise.all([nats.stop(), etcd.stop()]);
    },
  };
}

/** A cluster and something else (an `armature serve` to compare with, say), started side by side. */
export function startClusterBeside<T extends Stoppable>(other: () => Promise<T>): Promise<[ClusterServers, T]> {
  return startSideBySide(() => startClusterServers(), other);
}

interface Stoppable {
  stop(): Promise<unknown>;
}

/**
 * Starts two things at once; should either fail to start, the other is stopped before the error is
 * thrown: a process left running would keep the test file's process, and so the whole suite, from ending.
 */
async function startSideBySide<A extends Stoppable, B extends Stoppable>(
  a: () => Promise<A>,
  b: () => Promise<B>,
): Promise<[A, B]> {
  const [first, second] = await Promise.allSettled([a(), b()]);
  if (first.status === "fulfilled" && second.status === "fulfilled") return [first.value, second.value];
  await Promise.all([first, second].map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)));
  throw first.status === "rejected" ? first.reason : (second as PromiseRejectedResult).reason;
}

/** The instances a frontend's `/health` lists. */
export async function healthInstances(frontendUrl: string): Promise<{ id: string; role: string }[]> {
  return ((await (await fetch(`${frontendUrl}/health`)).json()) as { instances: { id: string; role: string }[] }).instances;
}

/** Waits (up to `timeoutMs`) until the frontend lists `count` instances; returns them. */
export async function waitForInstances(
  frontendUrl: string,
  count: number,
  timeoutMs = 15_000,
): Promise<{ id: string; role: string }[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const instances = await healthInstances(frontendUrl);
    if (instances.length >= count || Date.now() > deadline) return instances;
    await new Promise((r) => setTimeout(r, 50));
  }
}
