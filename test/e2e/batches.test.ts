import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI, { toFile } from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { ended, waitForBatch } from "../helpers/batch-wait.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";

// OpenAI's Files and Batch APIs on real llama.cpp, driven by the official openai client: a batch of
// 200 requests, killed half-way with SIGKILL, resumes after a restart and answers each request once.
const MODEL = "armature-tiny";
let dir: string;
let server: ServeProcess;

const serveArgs = (): string[] => [
  "--batch-dir",
  join(dir, "batches"),
  "--batch-concurrency",
  "2",
  "--batch-max-file-bytes",
  "65536",
];
const env = (): NodeJS.ProcessEnv => ({ ARMATURE_CACHE_DIR: dir });
const clientOf = (s: ServeProcess): OpenAI => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "unused", maxRetries: 0 });

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "armature-batches-"));
  server = await startServe(serveArgs(), env());
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

function chatLine(customId: string, content: string, extra: object = {}): string {
  return JSON.stringify({
    custom_id: customId,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: MODEL, messages: [{ role: "user", content }], max_tokens: 16, ignore_eos: true, ...extra },
  });
}

test("a batch of 200 killed half-way resumes after a restart and answers every request exactly once", async () => {
  const client = clientOf(server);
  const lines = Array.from({ length: 200 }, (_, i) => chatLine(`req-${i}`, `Tell me about the garden ${i}`));
  const file = await client.files.create({
    file: await toFile(Buffer.from(`${lines.join("\n")}\n`), "in.jsonl"),
    purpose: "batch",
  });
  assertMatchesSchema("OpenAIFile", file);
  assert.equal(file.purpose, "batch");
  const created = await client.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
    metadata: { team: "e2e" },
  });
  assertMatchesSchema("Batch", created);
  const halfway = await waitForBatch(client, created.id, (b) => (b.request_counts?.completed ?? 0) >= 40 || ended(b));
  assert.equal(halfway.status, "in_progress", "killed while in progress");
  assert.equal(await server.stop("SIGKILL"), null);
  server = await startServe(serveArgs(), env());
  const restarted = clientOf(server);
  const done = await waitForBatch(restarted, created.id, ended);
  assertMatchesSchema("Batch", done);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.request_counts, { total: 200, completed: 200, failed: 0 });
  assert.deepEqual(done.metadata, { team: "e2e" });
  assert.ok(done.output_file_id && done.error_file_id === undefined);
  const outputFile = await restarted.files.retrieve(done.output_file_id);
  assertMatchesSchema("OpenAIFile", outputFile);
  assert.equal(outputFile.purpose, "batch_output");
  const output = (await (await restarted.files.content(done.output_file_id)).text()).trim().split("\n");
  assert.equal(output.length, 200, "one line per request, none twice");
  const ids = output.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
  assert.deepEqual(new Set(ids), new Set(lines.map((_, i) => `req-${i}`)));
  for (const line of output) {
    const result = JSON.parse(line) as { response: { status_code: number; body: unknown }; error: unknown };
    assert.equal(result.response.status_code, 200);
    assert.equal(result.error, null);
    assertMatchesSchema("CreateChatCompletionResponse", result.response.body);
  }
  const listed = await restarted.batches.list();
  assert.ok(listed.data.some((b) => b.id === created.id));
  assertMatchesSchema("ListBatchesResponse", await (await fetch(`${server.url}/v1/batches`)).json());
  assertMatchesSchema("ListFilesResponse", await (await fetch(`${server.url}/v1/files`)).json());
});

test("an empty batch list matches OpenAI's schema too", async () => {
  const other = await startServe(["--engine", "mocker", "--batch-dir", join(dir, "empty")]);
  try {
    assertMatchesSchema("ListBatchesResponse", await (await fetch(`${other.url}/v1/batches`)).json());
    // ListFilesResponse requires first_id and last_id as strings, which no empty list has: null there.
    assert.deepEqual(await (await fetch(`${other.url}/v1/files`)).json(), {
      object: "list",
      data: [],
      has_more: false,
      first_id: null,
      last_id: null,
    });
  } finally {
    assert.equal(await other.stop("SIGTERM"), 0, other.output());
  }
});

test("bad lines get an error line naming them and the rest still run; an unknown model is that line's 404", async () => {
  const client = clientOf(server);
  const lines = [
    chatLine("ok-1", "Hello"),
    "{not json",
    chatLine("unknown-model", "Hello", { model: "no-such-model" }),
    JSON.stringify({ custom_id: "wrong-url", method: "POST", url: "/v1/completions", body: { model: MODEL, prompt: "x" } }),
    chatLine("ok-1", "duplicate id"),
    chatLine("streams", "Hello", { stream: true }),
    chatLine("ok-2", "Hello"),
  ];
  const file = await client.files.create({ file: await toFile(Buffer.from(lines.join("\n")), "mixed.jsonl"), purpose: "batch" });
  const batch = await client.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  });
  const done = await waitForBatch(client, batch.id, ended);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.request_counts, { total: 7, completed: 2, failed: 5 });
  assert.deepEqual(
    done.errors?.data?.map((e) => [e.line, e.param]),
    [
      [2, null],
      [4, "url"],
      [5, "custom_id"],
      [6, "body.stream"],
    ],
  );
  assert.ok(done.errors?.data?.every((e) => e.message?.startsWith(`line ${e.line}: `)));
  const errors = (await (await client.files.content(done.error_file_id as string)).text()).trim().split("\n");
  const byId = new Map(errors.map((l) => [(JSON.parse(l) as { id: string }).id.split("_").at(-1), JSON.parse(l)]));
  assert.equal(byId.get("3").response.status_code, 404);
  assert.equal(byId.get("3").response.body.error.code, "model_not_found");
  assert.match(byId.get("2").error.message, /^line 2: not a JSON object/);
  const output = (await (await client.files.content(done.output_file_id as string)).text()).trim().split("\n");
  assert.deepEqual(output.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id).sort(), ["ok-1", "ok-2"]);
});

test("uploads and batches that cannot be taken are refused naming the field or flag", async () => {
  const client = clientOf(server);
  await assert.rejects(
    client.files.create({ file: await toFile(Buffer.alloc(70_000, 0x61), "big.jsonl"), purpose: "batch" }),
    (error: InstanceType<typeof OpenAI.APIError>) => error.status === 413 && /--batch-max-file-bytes/.test(error.message),
  );
  await assert.rejects(
    client.files.create({ file: await toFile(Buffer.from(chatLine("a", "b")), "x.jsonl"), purpose: "fine-tune" }),
    (error: InstanceType<typeof OpenAI.APIError>) => error.status === 400 && /purpose must be 'batch'/.test(error.message),
  );
  const file = await client.files.create({ file: await toFile(Buffer.from(chatLine("a", "b")), "x.jsonl"), purpose: "batch" });
  const refusals: [object, number, string][] = [
    [
      { input_file_id: "file-000000000000000000000000", endpoint: "/v1/chat/completions", completion_window: "24h" },
      404,
      "input_file_id",
    ],
    [{ input_file_id: file.id, endpoint: "/v1/images", completion_window: "24h" }, 400, "endpoint"],
    [{ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "1h" }, 400, "completion_window"],
    [{ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", colour: "red" }, 400, "colour"],
  ];
  for (const [body, status, param] of refusals) {
    const res = await fetch(`${server.url}/v1/batches`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = (await res.json()) as { error: { param: string } };
    assert.deepEqual([res.status, answer.error.param], [status, param], JSON.stringify(body));
  }
  const deleted = await client.files.delete(file.id);
  assertMatchesSchema("DeleteFileResponse", deleted);
  await assert.rejects(client.files.retrieve(file.id), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 404);
});

test("a cancelled batch stops, keeps what it answered and says how many", async () => {
  const client = clientOf(server);
  const lines = Array.from({ length: 60 }, (_, i) => chatLine(`c-${i}`, `Story ${i}`, { max_tokens: 200 }));
  const file = await client.files.create({ file: await toFile(Buffer.from(lines.join("\n")), "cancel.jsonl"), purpose: "batch" });
  const batch = await client.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  });
  await waitForBatch(client, batch.id, (b) => (b.request_counts?.completed ?? 0) >= 2);
  const cancelling = await client.batches.cancel(batch.id);
  assert.ok(["cancelling", "cancelled"].includes(cancelling.status), cancelling.status);
  const done = await waitForBatch(client, batch.id, ended);
  assert.equal(done.status, "cancelled");
  const completed = done.request_counts?.completed ?? 0;
  assert.ok(completed >= 2 && completed < 60, `${completed} completed`);
  const output = (await (await client.files.content(done.output_file_id as string)).text()).trim().split("\n");
  assert.equal(output.length, completed);
});
