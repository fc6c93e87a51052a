import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { buildTinyModel, ensureTinyModel } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";

// Two models served at once by one `armature serve` on llama.cpp: the generated tiny model and a
// second GGUF built with other weights, each under its own name, two workers each.
let server: ServeProcess;
let client: OpenAI;

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-multi-model-"));
  const other = join(dir, "other.gguf");
  await writeFile(other, buildTinyModel({ seed: 99, layers: 1 }));
  server = await startServe([
    "--model",
    `${await ensureTinyModel()}=tiny-chat`,
    "--model",
    `${other}=tiny-other`,
    "--workers",
    "2",
    "--context-size",
    "256",
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

test("both models are listed, and each answers under its own name on its own workers", async () => {
  assert.match(server.output(), /armature serving models 'tiny-chat', 'tiny-other'/);
  const listed = await (await fetch(`${server.url}/v1/models`)).json();
  assertMatchesSchema("ListModelsResponse", listed);
  assert.deepEqual((await client.models.list()).data.map((m) => m.id).sort(), ["tiny-chat", "tiny-other"]);
  const health = (await (await fetch(`${server.url}/health`)).json()) as { instances: { id: string; model: string }[] };
  const workersOf = (model: string): string[] => health.instances.filter((i) => i.model === model).map((i) => i.id);
  assert.equal(workersOf("tiny-chat").length, 2);
  assert.equal(workersOf("tiny-other").length, 2);
  for (const model of ["tiny-chat", "tiny-other"]) {
    for (let i = 0; i < 3; i++) {
      const { data, response } = await client.chat.completions
        .create({ model, messages: [{ role: "user", content: `Hello ${i}` }], max_tokens: 6, temperature: 0 })
        .withResponse();
      assertMatchesSchema("CreateChatCompletionResponse", data);
      assert.equal(data.model, model);
      assert.ok(workersOf(model).includes(response.headers.get("x-armature-worker") ?? ""), `${model} served by its own worker`);
    }
  }
});

test("a model no worker serves is model_not_found, the others unaffected", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 }),
    (error: InstanceType<typeof OpenAI.APIError>) => error.status === 404 && error.code === "model_not_found",
  );
  const ok = await client.completions.create({ model: "tiny-other", prompt: "The", max_tokens: 3 });
  assert.equal(ok.model, "tiny-other");
});
