import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { startServe } from "../helpers/armature-process.js";

const BIN = fileURLToPath(new URL("../../bin/armature.js", import.meta.url));

/** Runs `armature ARGS` to its exit (or kills it after `limitMs`): exit code and what it printed. */
async function run(args: readonly string[], limitMs: number): Promise<{ code: number | null; stderr: string; killed: boolean }> {
  const child = spawn(process.execPath, [BIN, ...args, "--log-level", "warn"], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, limitMs);
  const [code] = (await once(child, "exit")) as [number | null];
  clearTimeout(timer);
  return { code, stderr, killed };
}

for (const engine of ["mocker", "llamacpp"]) {
  test(`serve (${engine}) on a port already taken exits non-zero at once with one line naming --port`, async () => {
    // Regression: it printed `listen EADDRINUSE` and an unhandled 'error' trace, then kept running without serving.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const result = await run(["serve", "--engine", engine, "--port", String(port)], 30_000);
      assert.equal(result.killed, false, "the process exited by itself");
      assert.equal(result.code, 1);
      const lines = result.stderr.trim().split("\n");
      assert.equal(lines.length, 1, `one line, got:\n${result.stderr}`);
      assert.match(
        lines[0] ?? "",
        new RegExp(`^armature: port ${port} on 127\\.0\\.0\\.1 is already in use; choose another with --port`),
      );
    } finally {
      holder.close();
    }
  });
}

test("a second signal during the drain ends the process at once, saying so", async () => {
  const server = await startServe(["--engine", "mocker"]);
  // A long stream keeps the drain busy (it would wait up to 30 s for it).
  const response = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "armature-mocker", prompt: "go", max_tokens: 5000, ignore_eos: true, stream: true }),
  });
  const reader = response.body?.getReader();
  await reader?.read();
  const exited = once(server.child, "exit");
  server.child.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(server.child.exitCode, null, "still draining after the first signal");
  server.child.kill("SIGTERM");
  const [code] = (await exited) as [number | null];
  assert.equal(code, 1);
  assert.match(server.output(), /armature: a second signal arrived; exiting without finishing the drain/);
  await reader?.cancel().catch(() => {});
});

// The other refusals of engine flags are startWorkers's, tested in one process (src/cli/start-workers.test.ts);
// a CUDA build that cannot load needs a process of its own (one process loads one llama.cpp build).
test("--gpu cuda on a machine without its driver stops serve at once, naming the flag", {
  skip: existsSync("/dev/nvidiactl") && "this machine has an NVIDIA driver",
}, async () => {
  const cuda = await run(["serve", "--port", "0", "--gpu", "cuda"], 60_000);
  assert.equal(cuda.code, 1);
  assert.match(cuda.stderr, /--gpu cuda: node-llama-cpp has no working cuda llama\.cpp build on this machine/);
});
