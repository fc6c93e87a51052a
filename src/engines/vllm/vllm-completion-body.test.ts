import assert from "node:assert/strict";
import { test } from "node:test";
import { EVERY_SAMPLER, generateRequest } from "../../../test/helpers/generate-request.js";
import { readsStructuredOutputs, vllmCompletionBody, vllmPrefillBody } from "./vllm-completion-body.js";

// Field names from vLLM's OpenAI CompletionRequest (vllm/entrypoints/openai/protocol.py) and its
// NixlConnector proxy (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py).

const request = generateRequest;
const served = { model: "served", version: "0.12.0", structuredOutputs: true };

test("greedy: token ids in, token ids back, usage asked; nothing else set", () => {
  assert.deepEqual(vllmCompletionBody(request(), served), {
    model: "served",
    prompt: [1, 2, 3],
    max_tokens: 5,
    stream: true,
    stream_options: { include_usage: true },
    return_token_ids: true,
    temperature: 0,
  });
});

test("sampled: each field by vLLM's name; its extensions pass through; a schema as response_format", () => {
  const schema = { type: "object" };
  const body = vllmCompletionBody(
    request({
      sampling: { ...EVERY_SAMPLER, seed: 42, logitBias: [{ token: 7, bias: -100 }] },
      ignoreEos: true,
      minTokens: 2,
      stopTokenIds: [9],
      constraint: { type: "json_schema", schema },
    }),
    served,
  );
  assert.deepEqual(
    [
      body.temperature,
      body.top_p,
      body.top_k,
      body.min_p,
      body.seed,
      body.presence_penalty,
      body.frequency_penalty,
      body.repetition_penalty,
    ],
    [0.7, 0.9, 20, 0.1, 42, 0.5, 0.25, 1.2],
  );
  assert.deepEqual(body.logit_bias, { "7": -100 });
  assert.deepEqual([body.ignore_eos, body.min_tokens, body.stop_token_ids], [true, 2, [9]]);
  assert.deepEqual(body.response_format, { type: "json_schema", json_schema: { name: "response", schema, strict: true } });
  // An unseeded sampled request gets a seed of its own.
  assert.equal(typeof vllmCompletionBody(request({ sampling: { temperature: 1 } }), served).seed, "number");
});

test("the prefill half: one token, not streamed, no min_tokens, kv_transfer_params asking for a remote decode", () => {
  const body = vllmPrefillBody(request({ minTokens: 3, disaggregation: { phase: "prefill" } }), served);
  assert.deepEqual(body, {
    model: "served",
    prompt: [1, 2, 3],
    max_tokens: 1,
    stream: false,
    return_token_ids: true,
    temperature: 0,
    kv_transfer_params: {
      do_remote_decode: true,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    },
  });
});

test("a regex and choices go to vLLM as structured_outputs, in the client's own terms", () => {
  const regex = vllmCompletionBody(
    request({ constraint: { type: "grammar", gbnf: "root ::= [0-9]+", param: "guided_regex", regex: "[0-9]+" } }),
    served,
  );
  assert.deepEqual(regex.structured_outputs, { regex: "[0-9]+" });
  const choice = vllmCompletionBody(
    request({
      constraint: { type: "grammar", gbnf: 'root ::= "a" | "b"', param: "structured_outputs.choice", choices: ["a", "b"] },
    }),
    served,
  );
  assert.deepEqual(choice.structured_outputs, { choice: ["a", "b"] });
  assert.equal("guided_regex" in regex || "guided_choice" in choice, false);
});

test("a GBNF grammar, a vLLM too old for structured_outputs, and log-probabilities are refused by name", () => {
  assert.throws(
    () => vllmCompletionBody(request({ constraint: { type: "grammar", gbnf: 'root ::= "a"', param: "guided_grammar" } }), served),
    (error: Error & { param?: string }) => error.param === "guided_grammar" && /GBNF/.test(error.message),
  );
  const old = { model: "served", version: "0.10.1", structuredOutputs: false };
  assert.throws(
    () =>
      vllmCompletionBody(
        request({ constraint: { type: "grammar", gbnf: 'root ::= "a"', param: "guided_regex", regex: "a" } }),
        old,
      ),
    (error: Error & { param?: string }) => error.param === "guided_regex" && /0\.10\.1/.test(error.message),
  );
  assert.throws(() => vllmCompletionBody(request({ logprobs: { top: 2 } }), served), /logprobs is not served by vllm workers/);
});

test("vLLM reads structured_outputs from 0.10.2 on, by the version /version gives", () => {
  for (const version of ["0.10.2", "0.10.2rc1", "0.11.0", "0.12.0", "0.23.1.dev5+gabc", "1.0.0"]) {
    assert.equal(readsStructuredOutputs(version), true, version);
  }
  for (const version of [undefined, "", "0.10.1", "0.10.1.1", "0.9.2", "dev"]) {
    assert.equal(readsStructuredOutputs(version), false, String(version));
  }
});

test("a request's priority goes to a vLLM that schedules by priority, and to no other (one scheduling first come, first served refuses any but 0)", () => {
  const urgent = request({ priority: -5 });
  assert.equal(vllmCompletionBody(urgent, { ...served, priorityScheduling: true }).priority, -5);
  assert.equal("priority" in vllmCompletionBody(urgent, served), false);
  assert.equal(
    "priority" in vllmCompletionBody(request(), { ...served, priorityScheduling: true }),
    false,
    "none given: vLLM's 0",
  );
  assert.equal(vllmPrefillBody(urgent, { ...served, priorityScheduling: true }).priority, -5, "the prefill half too");
});
