import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteTokenizer } from "../engines/index.js";
import type { ModelCard } from "../protocol/index.js";
import { ModelPipeline } from "./model-pipelines.js";
import { boundedRange } from "./template-range.js";

function pipelineWith(chatTemplate: string): ModelPipeline {
  return new ModelPipeline({ name: "m", chatTemplate } as ModelCard, new ByteTokenizer());
}

test("range() counts as Jinja's does: stop alone, start and stop, a step either way", () => {
  const range = boundedRange();
  assert.deepEqual(range(3), [0, 1, 2]);
  assert.deepEqual(range(2, 5), [2, 3, 4]);
  assert.deepEqual(range(0, 10, 4), [0, 4, 8]);
  assert.deepEqual(range(3, 0, -1), [3, 2, 1]);
  assert.deepEqual(range(5, 2), []);
  assert.throws(() => range(0, 3, 0), /step must not be zero/);
});

test("a chat template whose loops would stall the frontend is stopped by range()'s budget, with an error that says so", () => {
  const looping = pipelineWith("{% for i in range(10**9) %}x{% endfor %}");
  const started = performance.now();
  assert.throws(() => looping.renderChat([{ role: "user", content: "hi" }]), {
    code: "MODEL_LOAD_FAILED",
    message: /chat template asked range\(\) for more than 100,000 numbers in one rendering/,
  });
  assert.ok(performance.now() - started < 1000, "refused before looping");
  // Nested loops share the budget: 1,000 × 1,000 is past it too.
  const nested = pipelineWith("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}");
  assert.throws(() => nested.renderChat([{ role: "user", content: "hi" }]), { code: "MODEL_LOAD_FAILED" });
  // Templates count turns and tools with it, and render as before; each rendering has its own budget.
  const counting = pipelineWith("{% for i in range(messages|length) %}{{ i }}:{{ messages[i].content }};{% endfor %}");
  for (let k = 0; k < 3; k++) {
    assert.equal(
      counting.renderChat([
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
      ]),
      "0:a;1:b;",
    );
  }
});
