import assert from "node:assert/strict";
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import OpenAI, { toFile } from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { ended, waitForBatch } from "../helpers/batch-wait.js";
import { S3RVER_CREDENTIALS, type S3rver, startS3rver } from "../helpers/s3rver.js";

// The Batch API keeps its files and batches in the KV block manager's object store when one is set
// (a real S3 endpoint, s3rver): a batch killed half-way with SIGKILL resumes after a restart and
// answers each request once, and nothing lands in the default folder.
const MODEL = "armature-tiny";
const BUCKET = "fleet-state";
let s3: S3rver;
let admin: S3Client;
let cacheDir: string;

before(async () => {
  s3 = await startS3rver();
  admin = new S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
  await admin.send(new CreateBucketCommand({ Bucket: BUCKET }));
  cacheDir = await mkdtemp(join(tmpdir(), "armature-batches-s3-"));
});
after(async () => {
  admin.destroy();
  await s3.stop();
});

const start = (): Promise<ServeProcess> =>
  startServe(
    [
      "--context-size",
      "256",
      "--kv-host-bytes",
      "16MiB",
      "--kv-object-store",
      `s3://${BUCKET}?endpoint=${s3.endpoint}&region=us-east-1&forcePathStyle=true`,
      "--batch-concurrency",
      "2",
    ],
    {
      ARMATURE_CACHE_DIR: cacheDir,
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    },
  );

test("a batch kept in the object store, killed half-way, resumes after a restart and answers each request once", async () => {
  let server = await start();
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const lines = Array.from({ length: 30 }, (_, i) =>
      JSON.stringify({
        custom_id: `req-${i}`,
        method: "POST",
        url: "/v1/completions",
        body: { model: MODEL, prompt: `The garden ${i}`, max_tokens: 8, ignore_eos: true },
      }),
    );
    const file = await client.files.create({
      file: await toFile(Buffer.from(`${lines.join("\n")}\n`), "in.jsonl"),
      purpose: "batch",
    });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/completions",
      completion_window: "24h",
    });
    const halfway = await waitForBatch(client, created.id, (b) => (b.request_counts?.completed ?? 0) >= 8 || ended(b));
    assert.equal(halfway.status, "in_progress", "killed while in progress");
    const keys = await admin.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "batches/" }));
    const names = (keys.Contents ?? []).map((o) => o.Key as string);
    assert.ok(names.includes(`batches/files/${file.id}.jsonl`), names.join(" "));
    assert.ok(names.includes(`batches/batches/${created.id}.json`), names.join(" "));
    assert.ok(
      names.some((k) => k.startsWith(`batches/results/${created.id}/output/`)),
      "results are written as they come",
    );
    assert.equal(await server.stop("SIGKILL"), null);

    server = await start();
    const restarted = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const done = await waitForBatch(restarted, created.id, ended).catch((e) => {
      console.log(server.output());
      throw e;
    });
    assert.equal(done.status, "completed");
    assert.deepEqual(done.request_counts, { total: 30, completed: 30, failed: 0 });
    const output = (await (await restarted.files.content(done.output_file_id as string)).text()).trim().split("\n");
    assert.equal(output.length, 30, "one line per request, none twice");
    const ids = output.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
    assert.deepEqual(new Set(ids), new Set(lines.map((_, i) => `req-${i}`)));
    const after = await admin.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `batches/results/${created.id}/` }));
    assert.equal(after.KeyCount ?? 0, 0, "the result pieces became the output file");
    assert.deepEqual((await restarted.files.list()).data.map((f) => f.id).sort(), [file.id, done.output_file_id].sort());
    const cache = await readdir(cacheDir);
    assert.ok(!cache.includes("batches"), `no batch folder under the cache: ${cache.join(" ")}`);
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
});
