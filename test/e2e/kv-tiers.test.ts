import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { startWorkers } from "../../src/cli/start-workers.js";
import { silentLogger } from "../../src/observability/index.js";
import { createEmbeddedRuntime } from "../../src/runtime/index.js";
import { startServe } from "../helpers/armature-process.js";

// `armature serve` with KV tiers below the device, driven by the official openai client: a prompt
// the device forgot comes back from the disk tier, also after the process restarts, with the same
// greedy text, and usage's cached_tokens says how many prompt tokens were reused.
const BIN = fileURLToPath(new URL("../../bin/armature.js", import.meta.url));
const MODEL = "armature-tiny";
const story = (topic: string) => Array.from({ length: 30 }, (_, i) => `${topic} line ${i}.`).join(" ");

async function complete(client: OpenAI, prompt: string) {
  const answer = await client.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 0 });
  return { text: answer.choices[0]?.text, cached: answer.usage?.prompt_tokens_details?.cached_tokens ?? 0 };
}

test("a prompt evicted from the device is served from the disk tier, also after a restart, with the same text, routed there unpinned", async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  const diskDir = await mkdtemp(join(tmpdir(), "armature-kv-disk-"));
  // One sequence per worker: the next prompt evicts the previous one from the device. Two workers:
  // after the restart the router must find which one's disk holds the prompt (it asks each worker
  // for what it announced before the router listened).
  const args = [
    "--workers",
    "2",
    "--sequences",
    "1",
    "--context-size",
    "1024",
    "--kv-disk-dir",
    diskDir,
    "--kv-disk-filter",
    "off",
  ];
  let server = await startServe(args, { ARMATURE_CACHE_DIR: cacheDir });
  let reference: string | undefined;
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const first = await complete(client, story("shared"));
    reference = first.text;
    assert.equal(first.cached, 0);
    await complete(client, story("other"));
    const again = await complete(client, story("shared"));
    assert.equal(again.text, reference);
    assert.ok(again.cached >= 16, `cached_tokens ${again.cached}`);
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
  server = await startServe(args, { ARMATURE_CACHE_DIR: cacheDir });
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const restarted = await complete(client, story("shared"));
    assert.equal(restarted.text, reference, "same greedy text from blocks stored before the restart");
    assert.ok(restarted.cached >= 16, `cached_tokens ${restarted.cached} after the restart`);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /armature_kvbm_onboard_blocks_total\{model="armature-tiny",from="disk"\} [1-9]/);
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
});

/** Runs `armature serve ARGS` to its exit: exit code and what it printed. */
async function startFails(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", ...args, "--log-level", "warn"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [code] = (await once(child, "exit")) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}

test("wrong KV tier flags stop the start with a message naming the flag", async () => {
  const file = join(await mkdtemp(join(tmpdir(), "armature-kv-")), "a-file");
  await writeFile(file, "");
  // One through the real process: the message reaches the terminal and the exit code is 1.
  const result = await startFails(["--kv-disk-dir", join(file, "under-a-file")]);
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /--kv-disk-dir .* cannot be written/);
  // The rest where the process gets them: parsing the flags, then starting the workers.
  const runtime = createEmbeddedRuntime();
  try {
    assert.throws(() => resolveServeOptions(["--kv-host-bytes", "lots"], {}), /--kv-host-bytes .*must be a size in bytes/);
    assert.throws(() => resolveServeOptions(["--kv-offload", "sometimes"], {}), /--kv-offload/);
    const cases: Array<[string[], RegExp]> = [
      [["--kv-object-store", "ftp://somewhere/bucket"], /ftp:\/\/somewhere\/bucket/],
      [["--kv-disk-bytes", "1GiB"], /--kv-disk-bytes needs --kv-disk-dir/],
      [["--engine", "mocker", "--kv-host-bytes", "1GiB"], /--kv-host-bytes is for --engine llamacpp/],
      [["--kv-offload", "at-end"], /--kv-offload needs a KV tier/],
      [["--engine", "mocker", "--kv-offload", "at-end"], /--kv-offload is for --engine llamacpp/],
      [
        ["--engine", "llama-server", "--engine-url", "http://127.0.0.1:9", "--kv-host-bytes", "1GiB"],
        /--kv-host-bytes is for --engine llamacpp; llama-server keeps its own KV cache/,
      ],
    ];
    for (const [args, message] of cases) {
      await assert.rejects(startWorkers(resolveServeOptions(args, {}), runtime, silentLogger), message, args.join(" "));
    }
  } finally {
    await runtime.close();
  }
});
