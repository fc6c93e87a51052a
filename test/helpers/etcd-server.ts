import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./nats-server.js";

/** A real single-node etcd on free loopback ports with a temporary data folder, stopped by pid. */
export interface EtcdServer {
  readonly endpoint: string;
  readonly pid: number;
  /** Where a restart finds it: same ports, same data. */
  readonly layout: EtcdLayout;
  /** Stops it; `keepData` leaves the data folder for a restart. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export interface EtcdLayout {
  readonly client: number;
  readonly peer: number;
  readonly dataDir: string;
}

export const ETCD_BINARY = ["/usr/bin/etcd", "/usr/sbin/etcd"].find((p) => existsSync(p));

export async function startEtcd(layout?: EtcdLayout, host = "127.0.0.1"): Promise<EtcdServer> {
  if (!ETCD_BINARY) throw new Error("etcd is not installed (apt-get install etcd-server; .ci/run does it)");
  const client = layout?.client ?? (await freePort());
  const peer = layout?.peer ?? (await freePort());
  const dataDir = layout?.dataDir ?? (await mkdtemp(join(tmpdir(), "armature-etcd-")));
  const child: ChildProcess = spawn(
    ETCD_BINARY,
    [
      "--name",
      "armature-test",
      "--data-dir",
      dataDir,
      "--listen-client-urls",
      `http://${host}:${client}`,
      "--advertise-client-urls",
      `http://${host}:${client}`,
      "--listen-peer-urls",
      `http://127.0.0.1:${peer}`,
      "--initial-advertise-peer-urls",
      `http://127.0.0.1:${peer}`,
      "--initial-cluster",
      `armature-test=http://127.0.0.1:${peer}`,
    ],
    { stdio: "ignore" },
  );
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      if ((await fetch(`http://${host}:${client}/health`)).ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("etcd did not become healthy");
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    endpoint: `${host}:${client}`,
    pid: child.pid as number,
    layout: { client, peer, dataDir },
    async stop(options = {}) {
      if (child.exitCode === null) {
        process.kill(child.pid as number, "SIGTERM");
        await once(child, "exit");
      }
      if (!options.keepData) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
