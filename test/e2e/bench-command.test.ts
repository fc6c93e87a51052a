import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { startServe } from "../helpers/armature-process.js";

const run = promisify(execFile);
/** `armature bench` against the mocker model of the server at `url`. */
const benchAgainst = (url: string): string[] => ["bin/armature.js", "bench", "--url", url, "--model", "armature-mocker"];

test("armature bench replays a trace against a live server and reports JSON, cache hits included", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-bench-"));
  const trace = join(dir, "trace.jsonl");
  // Three sessions of four turns; each turn repeats the session's earlier blocks.
  const rows: string[] = [];
  for (let turn = 0; turn < 4; turn++) {
    for (let session = 0; session < 3; session++) {
      const hashIds = Array.from({ length: turn + 1 }, (_, k) => session * 10 + k);
      rows.push(
        JSON.stringify({
          timestamp: turn * 200 + session * 20,
          input_length: hashIds.length * 64,
          output_length: 8,
          hash_ids: hashIds,
        }),
      );
    }
  }
  await writeFile(trace, `${rows.join("\n")}\n`);
  const server = await startServe(["--engine", "mocker", "--workers", "2", "--block-size", "16", "--speedup-ratio", "20"]);
  try {
    const { stdout } = await run(process.execPath, [
      ...benchAgainst(server.url),
      "--trace",
      trace,
      "--trace-block-size",
      "64",
      "--slo-ttft",
      "10000",
      "--json",
    ]);
    const report = JSON.parse(stdout) as {
      requests: number;
      completed: number;
      hit_rate: number;
      goodput_rps: number;
      ttft_ms: { p50: number };
    };
    assert.equal(report.requests, 12);
    assert.equal(report.completed, 12);
    assert.ok(report.hit_rate > 0.3, `repeated session prefixes hit the cache: ${report.hit_rate}`);
    assert.ok(report.ttft_ms.p50 > 0 && report.goodput_rps > 0);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("armature bench bounded by --duration alone shows its progress as a count", async () => {
  const server = await startServe(["--engine", "mocker", "--speedup-ratio", "1000000"]);
  try {
    const { stdout, stderr } = await run(process.execPath, [
      ...benchAgainst(server.url),
      "--concurrency",
      "2",
      "--duration",
      "1",
      "--output-tokens",
      "4",
      "--json",
    ]);
    const report = JSON.parse(stdout) as { requests: number; completed: number };
    assert.ok(report.completed > 0 && report.completed === report.requests, stdout);
    const lines = stderr
      .split("\r")
      .map((line) => line.trim())
      .filter((line) => line.length > 0);
    assert.ok(lines.length > 0, `progress was shown: ${JSON.stringify(stderr)}`);
    for (const line of lines) assert.match(line, /^\d+ requests$/, "no total for a run bounded by time");
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("armature bench refuses ambiguous modes with a usage line", async () => {
  await assert.rejects(
    run(process.execPath, ["bin/armature.js", "bench", "--model", "m", "--concurrency", "2", "--rate", "3"]),
    (e: { stderr?: string }) => /exactly one of --concurrency, --rate, --trace/.test(e.stderr ?? ""),
  );
});
