import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { BenchOptions, BenchReport } from "../../src/bench/index.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface Served {
  readonly url: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
  /** Resident set size of the server process, from /proc. */
  rssBytes(): number;
  /** CPU seconds (user + system) the server process has used so far, from /proc. */
  cpuSeconds(): number;
}

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

/**
 * Spawns a TypeScript entry (under tsx) or the armature CLI and waits for `ready` on stdout (by
 * default an `http://…` address, which becomes `url`). `cwd`: the checkout to run it from (another
 * tree, for side-by-side runs); by default this one.
 */
export async function spawnServer(
  args: readonly string[],
  ready: RegExp = /(http:\/\/[\d.]+:\d+)/,
  cwd: string = ROOT,
): Promise<Served> {
  const child = spawn(process.execPath, ["--import", "tsx", ...args], { cwd, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) resolve(m[1]?.startsWith("http") ? m[1] : "");
    });
    child.once("exit", (code) => reject(new Error(`server exited early (${code}): ${out}`)));
  });
  return {
    url,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
    rssBytes() {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    },
    cpuSeconds() {
      // Fields after the command's closing parenthesis; utime and stime are the 14th and 15th of the line.
      const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
    },
  };
}

/**
 * `armature serve` on the mocker engine at a speedup so high that modelled engine time is nil: what
 * is measured is armature itself.
 */
export function spawnFastMockerServe(extra: readonly string[] = []): Promise<Served> {
  return spawnServer([
    "bin/armature.js",
    "serve",
    "--engine",
    "mocker",
    "--speedup-ratio",
    "1000000",
    "--port",
    "0",
    "--log-level",
    "warn",
    ...extra,
  ]);
}

/** A load run's report and the load generator's CPU, as a share of one core over the run. */
export type ChildBenchReport = BenchReport & { readonly generator_cpu: number };

/** Runs `armature bench`'s load generator in a child process. */
export function loadInChild(options: BenchOptions): Promise<ChildBenchReport> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "bench/load/load-process.ts", JSON.stringify(options)],
      { cwd: ROOT, maxBuffer: 1 << 20 },
      (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout) as ChildBenchReport)),
    );
  });
}

/** Machine description for benchmark reports. */
export function machine(): string {
  const cpu = /model name\s*:\s*(.+)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown CPU";
  const cores = readFileSync("/proc/cpuinfo", "utf8")
    .split("\n")
    .filter((l) => l.startsWith("processor")).length;
  return `${cores} × ${cpu}, Node ${process.version}`;
}
