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
  const started = await Promise.allSettled([startNatsServer(undefined, "127.0.0.1", options.jetStreamDir), startEtcd()]);
  const [natsStart, etcdStart] = started;
  if (natsStart.status === "rejected" || etcdStart.status === "rejected") {
    // Stop the one that did start: a server left running keeps the test file's process alive.
    await Promise.all(started.map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)));
    throw natsStart.status === "rejected" ? natsStart.reason : (etcdStart as PromiseRejectedResult).reason;
  }
  const nats = natsStart.value;
  const etcd = etcdStart.value;
  return {
    nats,
    etcd,
    flags: ["--bus", nats.url, "--discovery", `etcd://${etcd.endpoint}`],
    stop: async () => {
      await Promise.all([nats.stop(), etcd.stop()]);
    },
  };
}

/**
 * A cluster and something else (an `armature serve` to compare with, say) started side by side;
 * should either fail to start, the other is stopped before the error is thrown: a process left
 * running would keep the test file's process, and so the whole suite, from ending.
 */
export async function startClusterBeside<T extends { stop(): Promise<unknown> }>(
  other: () => Promise<T>,
): Promise<[ClusterServers, T]> {
  const [cluster, beside] = await Promise.allSettled([startClusterServers(), other()]);
  if (cluster.status === "fulfilled" && beside.status === "fulfilled") return [cluster.value, beside.value];
  await Promise.all([cluster, beside].map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)));
  throw cluster.status === "rejected" ? cluster.reason : (beside as PromiseRejectedResult).reason;
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
