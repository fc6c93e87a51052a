import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

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
