// A batch filling the fleet while interactive traffic runs: `armature serve --engine mocker` (one
// worker, Dynamo's timing model in real time), interactive streaming completions as a Poisson load
// from a child process, first alone, then while a batch of long completions runs through the Batch
// API with --batch-concurrency C. Prints the interactive TTFT p50 / p99 alone and beside the batch,
// and the tokens/s the batch made meanwhile (from its output file's usage).
// Usage: node --import tsx bench/batch-fill.ts [RATE] [SECONDS] [CONCURRENCY…]
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { loadInChild, machine, spawnServer } from "./load/processes.js";

const rate = Number(process.argv[2] ?? 4);
const seconds = Number(process.argv[3] ?? 30);
const concurrencies = process.argv.slice(4).map(Number);
if (concurrencies.length === 0) concurrencies.push(4, 16, 64);
const MODEL = "armature-mocker";
const INTERACTIVE = { inputTokens: 512, outputTokens: 64 };
const BATCH_LINES = 2000;
const BATCH_TOKENS = 256;

console.log(
  `Batch filling an idle fleet — ${machine()} — 1 mocker worker; interactive: ${rate} req/s Poisson for ${seconds} s, ${INTERACTIVE.inputTokens}-token prompts, ${INTERACTIVE.outputTokens} tokens; batch: ${BATCH_LINES} completions of ${BATCH_TOKENS} tokens\n`,
);
console.log(
  "| batch concurrency | interactive TTFT p50 / p99 ms | p50 against alone | interactive tok/s | batch requests done | batch tok/s |",
);
console.log("|---:|---:|---:|---:|---:|---:|");

let baseline: number | undefined;
for (const concurrency of [0, ...concurrencies]) {
  const dir = await mkdtemp(join(tmpdir(), "armature-batch-fill-"));
  const served = await spawnServer([
    "bin/armature.js",
    "serve",
    "--engine",
    "mocker",
    "--port",
    "0",
    "--log-level",
    "warn",
    "--batch-dir",
    dir,
    "--batch-concurrency",
    String(Math.max(1, concurrency)),
  ]);
  const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: "unused", maxRetries: 0 });
  let batchId: string | undefined;
  let started = 0;
  if (concurrency > 0) {
    const lines = Array.from({ length: BATCH_LINES }, (_, i) =>
      JSON.stringify({
        custom_id: `b${i}`,
        method: "POST",
        url: "/v1/completions",
        body: { model: MODEL, prompt: `batch document ${i} `.repeat(40), max_tokens: BATCH_TOKENS, ignore_eos: true },
      }),
    );
    const file = await client.files.create({
      file: await toFile(Buffer.from(lines.join("\n")), "batch.jsonl"),
      purpose: "batch",
    });
    started = performance.now();
    batchId = (await client.batches.create({ input_file_id: file.id, endpoint: "/v1/completions", completion_window: "24h" })).id;
    // Let the batch fill its slots before the interactive load starts.
    await new Promise((r) => setTimeout(r, 2000));
  }
  const report = await loadInChild({
    url: served.url,
    model: MODEL,
    mode: { kind: "rate", requestsPerSecond: rate, requests: Math.round(rate * seconds) },
    ...INTERACTIVE,
    seed: 7,
  });
  let batchCell = "–";
  let doneCell = "–";
  if (batchId) {
    await client.batches.cancel(batchId);
    let batch = await client.batches.retrieve(batchId);
    while (batch.status === "cancelling") {
      await new Promise((r) => setTimeout(r, 200));
      batch = await client.batches.retrieve(batchId);
    }
    const elapsed = (performance.now() - started) / 1000;
    const text = batch.output_file_id ? await (await client.files.content(batch.output_file_id)).text() : "";
    const tokens = text
      .split("\n")
      .filter((l) => l !== "")
      .reduce((sum, l) => sum + (JSON.parse(l).response.body.usage?.completion_tokens ?? 0), 0);
    batchCell = (tokens / elapsed).toFixed(0);
    doneCell = String(batch.request_counts?.completed ?? 0);
  }
  const alone = baseline ?? report.ttft_ms.p50;
  if (concurrency === 0) baseline = report.ttft_ms.p50;
  console.log(
    `| ${concurrency === 0 ? "no batch" : concurrency} | ${report.ttft_ms.p50.toFixed(0)} / ${report.ttft_ms.p99.toFixed(0)} | ${concurrency === 0 ? "1.00" : (report.ttft_ms.p50 / alone).toFixed(2)} | ${report.throughput_tok_s.toFixed(0)} | ${doneCell} | ${batchCell} |`,
  );
  if (report.failed > 0) console.log(`  ${report.failed} interactive requests failed: ${report.errors.slice(0, 3).join("; ")}`);
  await served.stop();
  await rm(dir, { recursive: true, force: true });
}
