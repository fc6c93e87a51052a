import assert from "node:assert/strict";
import { test } from "node:test";
import { EVERY_SAMPLER, generateRequest } from "../../../test/helpers/generate-request.js";
import type { GenerateRequest } from "../../protocol/index.js";
import { sglangGenerateBody } from "./sglang-generate-body.js";

// Field names from SGLang's GenerateReqInput and SamplingParams (python/sglang/srt/managers/io_struct.py,
// python/sglang/srt/sampling/sampling_params.py).

const request = (overrides: Partial<GenerateRequest> = {}): GenerateRequest =>
  generateRequest({ requestId: "req-1", ...overrides });

test("greedy: input_ids in, the request id as rid, streamed; nothing else set", () => {
  assert.deepEqual(sglangGenerateBody(request()), {
    input_ids: [1, 2, 3],
    rid: "req-1",
    stream: true,
    sampling_params: { max_new_tokens: 5, temperature: 0 },
  });
});

test("sampled: each field by SGLang's name (sampling_seed, min_new_tokens), a schema as json_schema text", () => {
  const schema = { type: "object", properties: { a: { type: "integer" } } };
  const { sampling_params: p } = sglangGenerateBody(
    request({
      sampling: { ...EVERY_SAMPLER, seed: 42, logitBias: [{ token: 7, bias: 3 }] },
      ignoreEos: true,
      minTokens: 2,
      stopTokenIds: [9],
      constraint: { type: "json_schema", schema },
    }),
  ) as { sampling_params: Record<string, unknown> };
  assert.deepEqual(p, {
    max_new_tokens: 5,
    temperature: 0.7,
    top_p: 0.9,
    top_k: 20,
    min_p: 0.1,
    presence_penalty: 0.5,
    frequency_penalty: 0.25,
    repetition_penalty: 1.2,
    logit_bias: { "7": 3 },
    ignore_eos: true,
    stop_token_ids: [9],
    sampling_seed: 42,
    min_new_tokens: 2,
    json_schema: JSON.stringify(schema),
  });
  const objectOnly = sglangGenerateBody(request({ constraint: { type: "json_object" } })) as {
    sampling_params: Record<string, unknown>;
  };
  assert.equal(objectOnly.sampling_params.json_schema, '{"type": "object"}');
});

test("a regex goes to SGLang as written, choices as one escaped alternation", () => {
  const body = (constraint: GenerateRequest["constraint"]) =>
    (sglangGenerateBody(request({ constraint })) as { sampling_params: Record<string, unknown> }).sampling_params;
  assert.equal(body({ type: "grammar", gbnf: "root ::= [a-z]+", param: "guided_regex", regex: "^[a-z]+$" }).regex, "^[a-z]+$");
  const choices = ["a.b", "(x)", "1+1", "c|d", "[e]", "f\\g", "plain text"];
  const regex = body({ type: "grammar", gbnf: "root ::= ...", param: "guided_choice", choices }).regex as string;
  // The alternation matches each choice whole, and nothing else that differs by one metacharacter.
  const whole = new RegExp(`^(?:${regex})$`);
  for (const choice of choices) assert.ok(whole.test(choice), choice);
  for (const other of ["aXb", "x", "11", "c", "e", "fg", "plain  text"]) assert.equal(whole.test(other), false, other);
});

test("a GBNF grammar and log-probabilities are refused by name", () => {
  assert.throws(
    () => sglangGenerateBody(request({ constraint: { type: "grammar", gbnf: 'root ::= "a"', param: "guided_grammar" } })),
    (error: Error & { param?: string }) => error.param === "guided_grammar",
  );
  assert.throws(() => sglangGenerateBody(request({ logprobs: { top: 1 } })), /logprobs is not served by sglang workers/);
});
