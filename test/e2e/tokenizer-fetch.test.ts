import assert from "node:assert/strict";
import { cp, mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import OpenAI from "openai";
import { HfTokenizer } from "../../src/engines/huggingface/hf-tokenizer.js";
import { ensureTinyModel } from "../../src/engines/index.js";
import { startServe } from "../helpers/armature-process.js";
import { startFakeVllm } from "../helpers/fake-engine-server.js";
import { qwen3TokenizerDir } from "../helpers/tokenizer-folders.js";

// A frontend that cannot read the tokenizer path its workers' cards name (another host's path)
// fetches the tokenizer from a worker over the request plane: here the path is a link removed once
// the worker has read it, so only the worker's copy remains.

test("a GGUF path the frontend cannot read: its vocabulary comes from the worker, and the model serves", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-fetch-"));
  const model = await ensureTinyModel(dir);
  const link = join(dir, "elsewhere.gguf");
  await symlink(model, link);
  const cache = join(dir, "cache");
  const server = await startServe(["--model", link], { ARMATURE_CACHE_DIR: cache });
  try {
    await rm(link);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const reference = await startServe(["--model", model]);
    try {
      const referenceClient = new OpenAI({ baseURL: `${reference.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const ask = {
        model: "elsewhere",
        messages: [{ role: "user" as const, content: "Tell me about the sea." }],
        max_tokens: 8,
        temperature: 0,
      };
      const fetched = await client.chat.completions.create(ask);
      const local = await referenceClient.chat.completions.create({ ...ask, model: "armature-tiny" });
      assert.equal(fetched.choices[0]?.message.content, local.choices[0]?.message.content);
      assert.equal(fetched.usage?.prompt_tokens, local.usage?.prompt_tokens);
    } finally {
      await reference.stop("SIGTERM");
    }
    const installed = await readdir(join(cache, "tokenizers"));
    assert.equal(installed.length, 1);
    assert.match(installed[0] as string, /^[0-9a-f]{64}$/);
    assert.deepEqual(await readdir(join(cache, "tokenizers", installed[0] as string)), ["vocab.gguf"]);
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
});

test("a Hugging Face folder the frontend cannot read: its files come from the vllm worker, template and all", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-fetch-"));
  const folder = join(dir, "qwen3");
  await cp(qwen3TokenizerDir(), folder, { recursive: true });
  const link = join(dir, "Qwen3");
  await symlink(folder, link);
  const qwen = HfTokenizer.load(folder);
  const engine = await startFakeVllm({ tokenize: (text) => qwen.encode(text), vocabSize: 151_000 });
  const server = await startServe(["--engine", "vllm", "--engine-url", engine.url, "--tokenizer", link], {
    ARMATURE_CACHE_DIR: join(dir, "cache"),
  });
  try {
    await rm(link);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const response = await client.chat.completions.create({
      model: "Qwen3",
      messages: [{ role: "user", content: "Hello" }],
      max_tokens: 3,
    });
    const prompt = qwen.encode("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
    assert.equal(response.usage?.prompt_tokens, prompt.length);
    assert.deepEqual(engine.bodies.at(-1)?.prompt, prompt);
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
    await engine.close();
    await qwen.close();
  }
});
