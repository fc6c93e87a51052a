import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import OpenAI from "openai";
import { buildTinyLora, ensureTinyModel } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { loraAdmin } from "../helpers/lora-admin.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";

// One `armature serve` on llama.cpp, two workers, the tiny model and its adapter `sea` (whose greedy
// output is the word "sea" over and over), one adapter context per worker (--max-loras 1).
let server: ServeProcess;
let client: OpenAI;
let modelPath: string;
let riverPath: string;
const run = promisify(execFile);

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-lora-e2e-"));
  const seaPath = join(dir, "sea.gguf");
  const { stdout } = await run(process.execPath, ["bin/armature.js", "model", "tiny-lora", "--out", seaPath]);
  assert.equal(stdout.trim(), seaPath);
  riverPath = join(dir, "river.gguf");
  await writeFile(riverPath, buildTinyLora({ word: " river" }));
  modelPath = await ensureTinyModel();
  server = await startServe([
    "--model",
    `${modelPath}=tiny`,
    "--lora",
    `sea=${seaPath}`,
    "--max-loras",
    "1",
    "--workers",
    "2",
    "--sequences",
    "2",
    "--context-size",
    "256",
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

const LONG_QUESTION = "Tell me about the harbour, the boats that come in at night, and the old lantern by the water.";

async function chat(model: string, content = LONG_QUESTION): Promise<{ text: string; worker: string; overlap: string }> {
  const { data, response } = await client.chat.completions
    .create({ model, messages: [{ role: "user", content }], max_tokens: 6, temperature: 0 })
    .withResponse();
  assertMatchesSchema("CreateChatCompletionResponse", data);
  assert.equal(data.model, model);
  return {
    text: data.choices[0]?.message.content ?? "",
    worker: response.headers.get("x-armature-worker") ?? "",
    overlap: response.headers.get("x-armature-overlap-blocks") ?? "",
  };
}

function admin(route: "load" | "unload", body: unknown): Promise<{ status: number; text: string }> {
  return loraAdmin(server.url, route, body);
}

test("the adapter is listed with its parent, and naming it as the model changes the greedy output; the base model's is its own", async () => {
  const listed = await (await fetch(`${server.url}/v1/models`)).json();
  assertMatchesSchema("ListModelsResponse", listed);
  const models = (await client.models.list()).data as unknown as { id: string; parent: string | null; kinds: string[] }[];
  assert.deepEqual(
    models.map((m) => [m.id, m.parent, m.kinds]),
    [
      ["tiny", null, ["chat", "embeddings"]],
      ["sea", "tiny", ["chat"]],
    ],
  );
  const adapted = await chat("sea");
  assert.equal(adapted.text, " sea".repeat(6));
  const base = await chat("tiny");
  assert.notEqual(base.text, adapted.text);
  assert.doesNotMatch(base.text, /^( sea)+$/);
  const completion = await client.completions.create({ model: "sea", prompt: "The harbour", max_tokens: 3, temperature: 0 });
  assert.equal(completion.choices[0]?.text, " sea sea sea");
  // Operators see the adapters per worker, and the adapter's traffic under its own name.
  const fleet = (await (await fetch(`${server.url}/v1/fleet`)).json()) as { workers: { loras: { served: string[] } }[] };
  assert.deepEqual(
    fleet.workers.map((w) => w.loras.served),
    [["sea"], ["sea"]],
  );
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(
    metrics,
    /armature_frontend_requests_total\{model="sea",endpoint="chat_completions",[^}]*status="success"[^}]*\} 1/,
  );
  assert.match(metrics, /armature_frontend_requests_total\{model="sea",endpoint="completions",[^}]*status="success"[^}]*\} 1/);
  assert.match(
    metrics,
    /armature_frontend_requests_total\{model="tiny",endpoint="chat_completions",[^}]*status="success"[^}]*\} 1/,
  );
});

test("the adapter's cached prompt draws its next request to the same worker, and does not count for the base model", async () => {
  const question = "What of the ships, the nets and the gulls that follow them home across the grey water at dusk?";
  const first = await chat("sea", question);
  await new Promise((resolve) => setTimeout(resolve, 50)); // the KV events reach the index
  const again = await chat("sea", question);
  assert.equal(again.worker, first.worker, `first overlap ${first.overlap}, again ${again.overlap}`);
  assert.ok(Number(again.overlap) >= 1, `overlap blocks ${again.overlap}`);
  const base = await chat("tiny", question);
  assert.equal(base.overlap, "0", "the adapter's blocks hash under its own seed");
});

test("adapters load and unload at run time on every worker, with vLLM's routes and replies", async () => {
  assert.deepEqual(await admin("load", { lora_name: "river", lora_path: riverPath }), {
    status: 200,
    text: "Success: LoRA adapter 'river' added successfully.",
  });
  assert.ok((await client.models.list()).data.some((m) => m.id === "river"));
  const workers = new Set<string>();
  for (const content of ["One question.", "Another question here.", "A third one, longer than the others."]) {
    const answer = await chat("river", content);
    assert.equal(answer.text, " river".repeat(6));
    workers.add(answer.worker);
  }
  const again = await admin("load", { lora_name: "river", lora_path: riverPath });
  assert.equal(again.status, 400);
  assert.match(again.text, /has already been loaded/);
  assert.deepEqual(await admin("unload", { lora_name: "river" }), {
    status: 200,
    text: "Success: LoRA adapter 'river' removed successfully.",
  });
  await assert.rejects(
    chat("river"),
    (error: InstanceType<typeof OpenAI.APIError>) => error.status === 404 && error.code === "model_not_found",
  );
  assert.equal((await admin("unload", { lora_name: "river" })).status, 404);
  assert.equal((await chat("sea")).text, " sea".repeat(6), "the other adapter serves on");
});

test("bad adapter input is refused by name and loses nothing", async () => {
  const notLora = await admin("load", { lora_name: "model-file", lora_path: modelPath });
  assert.equal(notLora.status, 400);
  const error = JSON.parse(notLora.text).error as { message: string; param: string };
  assert.equal(error.param, "lora_path");
  assert.match(error.message, /^lora_path: .* is not a LoRA adapter GGUF/);
  const unknown = await admin("load", { lora_name: "x", lora_path: riverPath, scale: 2 });
  assert.equal(unknown.status, 400);
  assert.match(JSON.parse(unknown.text).error.message, /unknown field 'scale'/);
  const missing = await admin("load", { lora_name: "x" });
  assert.equal(JSON.parse(missing.text).error.param, "lora_path");
  const embedding = await fetch(`${server.url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "sea", input: "hello" }),
  });
  assert.equal(embedding.status, 400);
  assert.match(await embedding.text(), /is a LoRA adapter of 'tiny'/);
  assert.deepEqual((await client.models.list()).data.map((m) => m.id).sort(), ["sea", "tiny"]);
  assert.equal((await chat("sea")).text, " sea".repeat(6));
});
