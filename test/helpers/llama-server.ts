import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { freePort } from "./free-port.js";

const BUILD_SCRIPT = fileURLToPath(new URL("../../scripts/build-llama-server.mjs", import.meta.url));

/** Where `scripts/build-llama-server.mjs` (npm test's pretest) put llama.cpp's own server. */
export function llamaServerBinary(): string {
  const path = spawnSync(process.execPath, [BUILD_SCRIPT, "--print-path"], { encoding: "utf8" }).stdout.trim();
  if (!existsSync(path)) throw new Error(`llama-server is not built at ${path}: run node scripts/build-llama-server.mjs`);
  return path;
}

/** An unmodified llama-server on a free loopback port, stopped by its pid. */
export interface LlamaServer {
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface LlamaServerSettings {
  readonly model: string;
  /** Slots (`--parallel`). Default 2. */
  readonly slots?: number;
  /** Tokens per slot. Default 1024. */
  readonly contextPerSlot?: number;
  /** CPU threads (`--threads` and `--threads-batch`). Default 1. */
  readonly threads?: number;
  /** LoRA adapter GGUFs (`--lora`), loaded without applying them (`--lora-init-without-apply`): a request turns one on. */
  readonly loras?: readonly string[];
  /** More flags, as llama-server reads them (`--rerank`). */
  readonly extraArgs?: readonly string[];
}

/**
 * Starts llama-server on the GGUF `model` with one CPU thread (unless told), its Prometheus `/metrics` on, its
 * slots' contexts kept apart (`--no-kv-unified`: each slot's cache is its own, as the tests reason
 * about), and waits until `/health` answers 200.
 */
export async function startLlamaServer(settings: LlamaServerSettings): Promise<LlamaServer> {
  // A port freePort found free may be taken by another test process's server before this one binds
  // it; what answers is then someone else's llama-server. Ours is the one serving our model's path.
  for (let attempt = 1; ; attempt++) {
    const started = await startOn(await freePort(), settings);
    if (started) return started;
    if (attempt === 3) throw new Error("llama-server: three free ports were taken by other servers before it bound them");
  }
}

async function startOn(port: number, settings: LlamaServerSettings): Promise<LlamaServer | undefined> {
  const slots = settings.slots ?? 2;
  const args = [
    "--model",
    settings.model,
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--parallel",
    String(slots),
    "--ctx-size",
    String(slots * (settings.contextPerSlot ?? 1024)),
    "--threads",
    String(settings.threads ?? 1),
    "--threads-batch",
    String(settings.threads ?? 1),
    "--metrics",
    "--no-webui",
    "--no-kv-unified",
    ...(settings.loras ?? []).flatMap((path) => ["--lora", path]),
    ...(settings.loras?.length ? ["--lora-init-without-apply"] : []),
    ...(settings.extraArgs ?? []),
  ];
  const child = spawn(llamaServerBinary(), args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const collect = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      if (/bind|address already in use/i.test(output)) return undefined;
      throw new Error(`llama-server did not become healthy:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const props = (await fetch(`${url}/props`)
    .then((r) => r.json())
    .catch(() => ({}))) as { model_path?: unknown };
  if (props.model_path !== settings.model || child.exitCode !== null) {
    child.kill("SIGKILL");
    return undefined;
  }
  return {
    url,
    pid: child.pid as number,
    child,
    output: () => output,
    async stop(signal = "SIGTERM") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      process.kill(child.pid as number, signal);
      await once(child, "exit");
    },
  };
}
