import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ensureTinyModel, LlamaCppEngine } from "../engines/index.js";
import { formatProfileJson } from "./profile-document.js";
import { runProfileSweep } from "./profile-sweep.js";

test("a llama.cpp sweep of the tiny model gives positive, finite numbers and TTFT rising with input length", async () => {
  const modelPath = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-profile-")));
  const engine = await LlamaCppEngine.create({ modelPath, sequences: 2, contextSizePerSequence: 512 });
  try {
    const document = await runProfileSweep(engine, {
      inputLengths: [32, 480],
      concurrency: [1, 2],
      contextLengths: [128],
      outputTokens: 16,
    });
    const numbers = [
      ...document.prefill.flatMap((p) => [p.ttftMs, p.tokensPerSecond]),
      ...document.decode.flatMap((p) => [p.itlMs, p.tokensPerSecond, p.kvUsage]),
    ];
    assert.equal(numbers.length, 2 * 2 + 2 * 3);
    for (const value of numbers) assert.ok(Number.isFinite(value) && value > 0, String(value));
    const [short, long] = document.prefill;
    // 15 times the prompt: the model's compute, not the fixed cost of a call, sets the gap.
    assert.ok(long!.ttftMs > short!.ttftMs, `TTFT ${short!.ttftMs} ms at 32 tokens, ${long!.ttftMs} ms at 480`);
    // 2 sequences of 512 tokens, blocks of 16: a request of 120 + 16 tokens holds 9 of the 64 blocks.
    assert.deepEqual(
      document.decode.map((p) => p.kvUsage),
      [9 / 64, 18 / 64],
    );
    formatProfileJson(document, "llamacpp.json");
  } finally {
    await engine.close();
  }
});
