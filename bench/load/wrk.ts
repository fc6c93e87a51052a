import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** What `wrk` measured, and what it cost: its own CPU seconds over the run, from `/usr/bin/time`. */
export interface WrkResult {
  readonly requestsPerSecond: number;
  /** Responses read whole over the run. */
  readonly requests: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number };
  /** Responses that were not 2xx/3xx, and socket errors (connect, read, write, timeout). */
  readonly failed: number;
  /** CPU the load generator used, as a share of one core over the run. */
  readonly generatorCpu: number;
}

/**
 * Drives `url` + `path` with Debian's `wrk` (one thread, `connections` keep-alive connections, a JSON
 * POST body): the efficient load generator the benchmarks calibrate against, since a Node client
 * caps a fast server well below what it can serve. wrk reads each response whole: its request rate
 * and latency are the stream's end, not its first token.
 */
export async function runWrk(url: string, path: string, body: unknown, connections: number, seconds: number): Promise<WrkResult> {
  const dir = await mkdtemp(join(tmpdir(), "armature-wrk-"));
  const script = join(dir, "post.lua");
  await writeFile(
    script,
    `wrk.method = "POST"\nwrk.headers["content-type"] = "application/json"\nwrk.body = ${JSON.stringify(JSON.stringify(body))}\n`,
  );
  try {
    const output = await new Promise<string>((resolve, reject) =>
      execFile(
        "/usr/bin/time",
        [
          "-f",
          "cpu %U %S",
          "wrk",
          "-t1",
          `-c${connections}`,
          `-d${seconds}s`,
          "--latency",
          "-s",
          script,
          new URL(path, url).href,
        ],
        { maxBuffer: 1 << 20 },
        (error, stdout, stderr) =>
          error ? reject(new Error(`wrk failed: ${stderr || error.message}`)) : resolve(stdout + stderr),
      ),
    );
    const number = (pattern: RegExp): number => Number(pattern.exec(output)?.[1] ?? Number.NaN);
    const ms = (label: string): number => {
      const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(output);
      if (!m) return Number.NaN;
      return Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1);
    };
    const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
    const socketErrors = errors ? errors.slice(1).reduce((a, n) => a + Number(n), 0) : 0;
    const cpu = /cpu ([\d.]+) ([\d.]+)/.exec(output);
    return {
      requestsPerSecond: number(/Requests\/sec:\s+([\d.]+)/),
      requests: number(/(\d+) requests in/),
      latencyMs: { p50: ms("50"), p99: ms("99") },
      failed: (Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0) || 0) + socketErrors,
      generatorCpu: cpu ? (Number(cpu[1]) + Number(cpu[2])) / seconds : Number.NaN,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
