import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createLogger } from "../observability/index.js";
import { ArmatureError } from "../protocol/index.js";
import { loadClusterFile, toFlags } from "./cluster-file.js";
import { untilSignal } from "./signals.js";

const BIN = fileURLToPath(new URL("../../bin/armature.js", import.meta.url));

interface Member {
  readonly name: string;
  readonly child: ChildProcess;
}

/**
 * `armature up CLUSTER.yaml`: starts nats-server and etcd when the file asks, then the workers and
 * the frontend as child processes; prefixes and merges their output; on Ctrl-C stops the frontend,
 * then the workers, then the servers, each by its pid.
 */
export async function upCommand(argv: readonly string[], out: (t: string) => void): Promise<number> {
  const path = argv[0];
  if (!path) throw new ArmatureError("CONFIG_INVALID", "usage: armature up CLUSTER.yaml");
  const cluster = await loadClusterFile(path);
  const members: Member[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const start = (name: string, command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Member => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...(env ? { env } : {}) });
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on("line", (line) => out(`[${name}] ${line}\n`));
    }
    const member = { name, child };
    members.push(member);
    return member;
  };
  try {
    let bus = cluster.bus;
    let discovery = cluster.discovery;
    if (cluster.nats) {
      const binary = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].find((p) => existsSync(p));
      if (!binary) throw new ArmatureError("CONFIG_INVALID", "nats-server is not installed (apt-get install nats-server)");
      // JetStream on, so workers and routers may keep KV events (--durable-kv-events).
      const storeDir = await mkdtemp(join(tmpdir(), "armature-up-nats-"));
      cleanups.push(() => rm(storeDir, { recursive: true, force: true }));
      start("nats", binary, ["-a", "127.0.0.1", "-p", String(cluster.nats.port), "-js", "-sd", storeDir]);
      bus = `nats://127.0.0.1:${cluster.nats.port}`;
      await waitForPort(cluster.nats.port);
    }
    if (cluster.etcd) {
      const binary = ["/usr/bin/etcd", "/usr/sbin/etcd"].find((p) => existsSync(p));
      if (!binary) throw new ArmatureError("CONFIG_INVALID", "etcd is not installed (apt-get install etcd-server)");
      const dataDir = await mkdtemp(join(tmpdir(), "armature-up-etcd-"));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const client = `http://127.0.0.1:${cluster.etcd.port}`;
      const peer = `http://127.0.0.1:${cluster.etcd.peerPort ?? cluster.etcd.port + 1}`;
      start("etcd", binary, [
        "--name",
        "armature-up",
        "--data-dir",
        dataDir,
        "--listen-client-urls",
        client,
        "--advertise-client-urls",
        client,
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        `armature-up=${peer}`,
      ]);
      discovery = `etcd://127.0.0.1:${cluster.etcd.port}`;
      await waitForHttp(`${client}/health`);
    }
    // Through the environment, not argv: the URLs may carry passwords, and argv is public in `ps`.
    const links = { ...process.env, ARMATURE_BUS: bus as string, ARMATURE_DISCOVERY: discovery as string };
    let n = 0;
    for (const entry of cluster.workers) {
      for (let i = 0; i < (entry.count ?? 1); i++)
        start(`worker-${++n}`, process.execPath, [BIN, "worker", ...toFlags(entry)], links);
    }
    const routers = cluster.routers ? (cluster.routers.count ?? 1) : 0;
    for (let i = 1; i <= routers; i++) {
      start(`router-${i}`, process.execPath, [BIN, "router", ...toFlags(cluster.routers ?? {})], links);
    }
    start("frontend", process.execPath, [BIN, "frontend", ...toFlags(cluster.frontend)], links);
    const routerNote = routers > 0 ? `, ${routers} router${routers === 1 ? "" : "s"}` : "";
    out(`armature up: ${n} worker process${n === 1 ? "" : "es"}${routerNote} and a frontend; Ctrl-C stops everything\n`);
    await untilSignal(createLogger({ level: "warn" }));
  } finally {
    // Frontend first, then workers (they drain), then the servers they use.
    const order = [...members].sort((a, b) => rank(a.name) - rank(b.name));
    for (const group of [0, 1, 2]) {
      await Promise.all(order.filter((m) => rank(m.name) === group).map((m) => stop(m.child)));
    }
    for (const cleanup of cleanups) await cleanup();
  }
  out("armature up: stopped\n");
  return 0;
}

/** Stop order: frontends, then routers and workers (workers drain), then nats and etcd. */
function rank(name: string): number {
  return name === "frontend" ? 0 : name.startsWith("worker") || name.startsWith("router") ? 1 : 2;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return;
  child.kill("SIGTERM");
  await once(child, "exit");
}

async function waitForPort(port: number): Promise<void> {
  const { connect } = await import("node:net");
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new ArmatureError("CONFIG_INVALID", `nothing listens on port ${port} after 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function waitForHttp(url: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new ArmatureError("CONFIG_INVALID", `${url} did not answer in 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
