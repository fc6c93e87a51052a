import { readFileSync, rmSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type ServeProcess, startArmature } from "../../test/helpers/armature-process.js";
import { type EtcdServer, startEtcd } from "../../test/helpers/etcd-server.js";
import { type NatsServer, startNatsServer } from "../../test/helpers/nats-server.js";

/** An armature process the soak watches: its role, and whether its exit was the soak's doing. */
export interface Member {
  readonly name: string;
  readonly process: ServeProcess;
  readonly pid: number;
  /** Set before the soak signals it, so its exit is not counted as a crash. */
  killedBySoak: boolean;
}

/** An armature process that exited on its own. */
export interface Crash {
  readonly name: string;
  readonly pid: number;
  readonly atS: number;
  readonly code: number | null;
  readonly signal: string | null;
  readonly outputTail: string;
}

type RestartableNats = NatsServer & { readonly ports: { port: number; monitor: number } };

export interface SoakClusterOptions {
  readonly workers: number;
  readonly speedupRatio: number;
  readonly requestTimeoutS: number;
  /** Seconds since the soak began, for crash timestamps. */
  readonly elapsedS: () => number;
}

/**
 * nats-server and etcd on free loopback ports, `armature router`, `armature frontend --router
 * remote` and mocker workers, all stopped by pid. Workers and nats-server can be killed and
 * restarted in place (same slot, same ports).
 */
export class SoakCluster {
  readonly crashes: Crash[] = [];
  readonly #options: SoakClusterOptions;
  readonly #etcd: EtcdServer;
  #nats: RestartableNats;
  readonly #workers: (Member | undefined)[];
  #router: Member | undefined;
  #frontend: Member | undefined;
  /** Every process started, killed ones included, for their logs. */
  readonly #everyMember: Member[] = [];
  #natsRunning = true;
  #stopped = false;

  private constructor(options: SoakClusterOptions, nats: RestartableNats, etcd: EtcdServer) {
    this.#options = options;
    this.#nats = nats;
    this.#etcd = etcd;
    this.#workers = Array.from({ length: options.workers }, () => undefined);
  }

  static async start(options: SoakClusterOptions): Promise<SoakCluster> {
    const [nats, etcd] = await Promise.all([startNatsServer(), startEtcd()]);
    const cluster = new SoakCluster(options, nats, etcd);
    try {
      await Promise.all(cluster.#workers.map((_, slot) => cluster.startWorker(slot)));
      cluster.#router = await cluster.#spawn("router", ["router", ...cluster.#flags()]);
      cluster.#frontend = await cluster.#spawn("frontend", [
        "frontend",
        ...cluster.#flags(),
        "--port",
        "0",
        "--router",
        "remote",
        "--request-timeout",
        String(options.requestTimeoutS),
      ]);
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  get url(): string {
    return this.#frontend?.process.url ?? "";
  }

  /** Every armature process now running, by name. */
  members(): Member[] {
    return [this.#frontend, this.#router, ...this.#workers].filter((m): m is Member => m !== undefined);
  }

  worker(slot: number): Member | undefined {
    return this.#workers[slot];
  }

  async startWorker(slot: number): Promise<Member> {
    const member = await this.#spawn(`worker-${slot}`, [
      "worker",
      ...this.#flags(),
      "--engine",
      "mocker",
      "--speedup-ratio",
      String(this.#options.speedupRatio),
    ]);
    this.#workers[slot] = member;
    return member;
  }

  /** Log lines (every process, killed ones too) that mention `text`, e.g. a request id. */
  logLines(text: string): string[] {
    return this.#everyMember.flatMap((m) =>
      m.process
        .output()
        .split("\n")
        .filter((line) => line.includes(text))
        .map((line) => `${m.name} (pid ${m.pid}): ${line.slice(0, 600)}`),
    );
  }

  /** Writes every process's output (killed ones too) into `dir`, one file each. */
  async saveLogs(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    await Promise.all(this.#everyMember.map((m) => writeFile(join(dir, `${m.name}-${m.pid}.log`), m.process.output())));
  }

  /** SIGKILLs the worker in `slot` and waits for its exit. */
  async killWorker(slot: number): Promise<number | undefined> {
    const member = this.#workers[slot];
    if (!member) return undefined;
    member.killedBySoak = true;
    this.#workers[slot] = undefined;
    await member.process.stop("SIGKILL");
    return member.pid;
  }

  /** Stops nats-server (SIGTERM), waits `downMs`, starts it again on the same ports. */
  async restartNats(downMs: number): Promise<{ oldPid: number; newPid: number }> {
    const oldPid = this.#nats.pid;
    this.#natsRunning = false;
    await this.#nats.stop();
    await new Promise((r) => setTimeout(r, downMs));
    this.#nats = await startNatsServer(this.#nats.ports);
    this.#natsRunning = true;
    return { oldPid, newPid: this.#nats.pid };
  }

  async stop(): Promise<void> {
    const members = this.members();
    for (const member of members) member.killedBySoak = true;
    await Promise.all(members.map((m) => m.process.stop("SIGTERM")));
    await Promise.all([this.#nats.stop(), this.#etcd.stop()]);
    this.#stopped = true;
  }

  /** Last resort when the soak itself dies: SIGKILLs every process it started, synchronously. */
  killNow(): void {
    if (this.#stopped) return;
    const running = this.members().filter((m) => m.process.child.exitCode === null && m.process.child.signalCode === null);
    for (const pid of [...running.map((m) => m.pid), ...(this.#natsRunning ? [this.#nats.pid] : []), this.#etcd.pid]) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    rmSync(this.#etcd.layout.dataDir, { recursive: true, force: true });
  }

  #flags(): string[] {
    return ["--bus", this.#nats.url, "--discovery", `etcd://${this.#etcd.endpoint}`];
  }

  async #spawn(name: string, args: string[]): Promise<Member> {
    const process = await startArmature(args);
    const member: Member = { name, process, pid: process.child.pid as number, killedBySoak: false };
    this.#everyMember.push(member);
    process.child.once("exit", (code, signal) => {
      if (member.killedBySoak) return;
      this.crashes.push({
        name,
        pid: member.pid,
        atS: this.#options.elapsedS(),
        code,
        signal,
        outputTail: process.output().slice(-2000),
      });
    });
    return member;
  }
}

/** Resident set size of `pid` in bytes (VmRSS in /proc/PID/status); undefined once it is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}
