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
import { plannerArgs } from "./cluster-planner.js";
import { untilSignal } from "./signals.js";

const BIN = fileURLToPath(new URL("../../bin/armature.js", import.meta.url));

interface Member {
  readonly name: string;
  readonly child: ChildProcess;
  /** nats-server exits 0 on SIGINT but 1 on SIGTERM; armature processes drain on either. */
  readonly stopSignal: NodeJS.Signals;
  /** How it ended: its exit status, or the signal that ended it. */
  ended?: number | NodeJS.Signals;
}

/** How long a member may take to stop before SIGKILL: past armature's own 45 s drain limit. */
const STOP_DEADLINE_MS = 60_000;

/**
 * `armature up CLUSTER.yaml`: starts nats-server and etcd when the file asks, then the engine
 * servers a worker entry gives an `engine-command` for, the workers, the
 * planner (which starts workers of its own), routers and the frontend as child processes; prefixes
 * and merges their output. On Ctrl-C (or SIGTERM, SIGHUP) it stops them in order, each by its pid,
 * waiting for each group to exit: the frontends, then the workers and the planner (they drain; the
 * planner drains the workers it started), then the routers, then nats and etcd. It prints how each
 * ended and exits 1 if one did not end cleanly. A second Ctrl-C kills them all at once.
 */
export async function upCommand(argv: readonly string[], out: (t: string) => void): Promise<number> {
  const path = argv[0];
  if (!path) throw new ArmatureError("CONFIG_INVALID", "usage: armature up CLUSTER.yaml");
  const cluster = await loadClusterFile(path);
  const members: Member[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const start = (name: string, command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Member => {
    // Each in its own process group: a Ctrl-C at the terminal signals the whole foreground group,
    // and children that got it would stop all at once (etcd before the workers deregister) and then
    // take our ordered SIGTERM as a second signal. Only `up` hears the terminal; it stops them in order.
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, ...(env ? { env } : {}) });
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on("line", (line) => out(`[${name}] ${line}\n`));
    }
    const member: Member = { name, child, stopSignal: name === "nats" ? "SIGINT" : "SIGTERM" };
    child.once("exit", (code, signal) => {
      member.ended = code ?? signal ?? undefined;
    });
    members.push(member);
    return member;
  };
  // Detached children outlive a forced exit of `up` unless killed here (a second Ctrl-C, a crash).
  const killAll = (): void => {
    for (const { child } of members) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  process.on("exit", killAll);
  // The terminal went away: stop in order, as for Ctrl-C.
  const onHangup = (): void => {
    process.kill(process.pid, "SIGTERM");
  };
  process.on("SIGHUP", onHangup);
  let clean = true;
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
    let engines = 0;
    for (const entry of cluster.workers) {
      // The engine server first (the worker waits for its health, --engine-wait); `exec`, so the
      // signal that stops it reaches the engine, not a shell.
      const command = entry["engine-command"];
      if (command) start(`engine-${++engines}`, "/bin/sh", ["-c", `exec ${command}`]);
      for (let i = 0; i < (entry.count ?? 1); i++)
        start(`worker-${++n}`, process.execPath, [BIN, "worker", ...toFlags(entry)], links);
    }
    // Before the frontend, whose start waits for a first worker: the planner starts --min-workers at once.
    if (cluster.planner) start("planner", process.execPath, [BIN, "planner", ...plannerArgs(cluster.planner)], links);
    const routers = cluster.routers ? (cluster.routers.count ?? 1) : 0;
    for (let i = 1; i <= routers; i++) {
      start(`router-${i}`, process.execPath, [BIN, "router", ...toFlags(cluster.routers ?? {})], links);
    }
    start("frontend", process.execPath, [BIN, "frontend", ...toFlags(cluster.frontend)], links);
    const routerNote = routers > 0 ? `, ${routers} router${routers === 1 ? "" : "s"}` : "";
    const plannerNote = cluster.planner ? ", a planner (it starts its own workers)" : "";
    const engineNote = engines > 0 ? ` (and ${engines} engine server${engines === 1 ? "" : "s"})` : "";
    out(
      `armature up: ${n} worker process${n === 1 ? "" : "es"}${engineNote}${plannerNote}${routerNote} and a frontend; Ctrl-C stops everything\n`,
    );
    await untilSignal(createLogger({ level: "warn" }));
  } finally {
    process.off("SIGHUP", onHangup);
    // The frontend first, so no new request comes in; the workers drain what they have and
    // deregister while etcd is still there; then the engine servers they drove and the routers;
    // then the servers everyone used.
    for (const group of [0, 1, 2, 3]) {
      await Promise.all(members.filter((m) => rank(m.name) === group).map((m) => stop(m)));
    }
    for (const cleanup of cleanups) await cleanup();
    process.off("exit", killAll);
    for (const m of members) {
      if (!endedCleanly(m)) {
        clean = false;
        out(`armature up: ${m.name} did not stop cleanly (${describe(m.ended)})\n`);
      }
    }
  }
  out(`armature up: stopped (${members.map((m) => `${m.name} ${describe(m.ended)}`).join(", ")})\n`);
  return clean ? 0 : 1;
}

/** Stop order: frontends, workers and the planner (they drain), engine servers and routers, then nats and etcd. */
function rank(name: string): number {
  if (name === "frontend") return 0;
  if (name.startsWith("worker") || name === "planner") return 1;
  return name.startsWith("router") || name.startsWith("engine") ? 2 : 3;
}

async function stop(member: Member): Promise<void> {
  const { child } = member;
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = once(child, "exit");
  child.kill(member.stopSignal);
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_DEADLINE_MS);
  await exited;
  clearTimeout(timer);
}

/** Exit status 0; etcd always ends by re-raising the signal it handled, so for etcd that counts too. */
function endedCleanly(member: Member): boolean {
  return member.ended === 0 || (member.name === "etcd" && member.ended === member.stopSignal);
}

function describe(ended: number | NodeJS.Signals | undefined): string {
  return ended === undefined ? "still running" : String(ended);
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
