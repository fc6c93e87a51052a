import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ExitedAtOnce, onFreePorts } from "./free-port.js";

export const PROMETHEUS = "/usr/bin/prometheus";

/** Whether Debian's prometheus server is here; in CI it must be (npm test's pretest step installs it). */
export function havePrometheus(): boolean {
  const present = existsSync(PROMETHEUS);
  if (!present && process.env.CI) throw new Error("prometheus must be installed in CI");
  return present;
}

/** A Prometheus server of this test, with its HTTP API. */
export interface PrometheusServer {
  readonly url: string;
  /** `GET /api/v1/query` at the current time: the result vector (or scalar as one sample). */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Stops the server (by its pid) and deletes its data. */
  stop(): Promise<void>;
}

/**
 * Starts `prometheus` on a free loopback port, scraping `targets` (`host:port`, `/metrics`) every
 * `scrapeIntervalS` seconds into a throwaway data folder, and resolves once it scraped each target.
 * Should it exit at once (another process took the port between the choice and its bind), a port is
 * chosen again, up to three times.
 */
export async function startPrometheus(targets: readonly string[], scrapeIntervalS = 1): Promise<PrometheusServer> {
  return onFreePorts(1, ([port]) => startPrometheusOn(port as number, targets, scrapeIntervalS));
}

async function startPrometheusOn(port: number, targets: readonly string[], scrapeIntervalS: number): Promise<PrometheusServer> {
  const dir = await mkdtemp(join(tmpdir(), "armature-prometheus-"));
  const config = join(dir, "prometheus.yml");
  // JSON is YAML.
  await writeFile(
    config,
    JSON.stringify({
      global: { scrape_interval: `${scrapeIntervalS}s`, evaluation_interval: `${scrapeIntervalS}s` },
      scrape_configs: [{ job_name: "armature", metrics_path: "/metrics", static_configs: [{ targets }] }],
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let output = "";
  child.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  const exited = once(child, "exit");
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.pid !== undefined) {
      process.kill(child.pid, "SIGTERM");
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  // Ready, then every target scraped once: Prometheus adds static targets only at its discovery
  // manager's first update, about 5 s after the start, and counters need scrapes from before a load.
  const allUp = async (): Promise<boolean> => {
    const res = await fetch(`${url}/api/v1/targets`).catch(() => undefined);
    if (!res?.ok) return false;
    const body = (await res.json()) as { data: { activeTargets: { health: string }[] } };
    const active = body.data.activeTargets;
    return active.length === targets.length && active.every((t) => t.health === "up");
  };
  try {
    await until(
      allUp,
      () => output,
      () => child.exitCode !== null,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    stop,
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
      const body = (await res.json()) as {
        status: string;
        error?: string;
        data?: { resultType: string; result: unknown };
      };
      if (body.status !== "success" || !body.data) throw new Error(`prometheus refused ${expr}: ${body.error}`);
      if (body.data.resultType === "scalar") return [{ metric: {}, value: body.data.result as [number, string] }];
      return body.data.result as { metric: Record<string, string>; value: [number, string] }[];
    },
  };
}

async function until(ready: () => Promise<boolean>, output: () => string, exited: () => boolean): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await ready()) return;
    if (exited()) throw new ExitedAtOnce(`prometheus exited before it scraped its targets:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`prometheus did not scrape its targets in 30 s:\n${output()}`);
}
