import assert from "node:assert/strict";
import { test } from "node:test";
import { parseTrtllmChunk, trtllmLoad } from "./trtllm-engine.js";

// Chunks as trtllm-serve's completion_stream_post_processor writes them (every field present,
// nulls included), worked by hand from its source.
const URL = "http://trt:8000";
const chunk = (choice: Record<string, unknown>) =>
  JSON.stringify({
    id: "cmpl-7",
    object: "text_completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, text: "", token_ids: [], logprobs: null, finish_reason: null, stop_reason: null, ...choice }],
    usage: null,
  });

test("a chunk's new token ids, its finish, and the usage chunk's cached tokens are read", () => {
  assert.deepEqual(parseTrtllmChunk(URL, chunk({ token_ids: [5, 6] })), { tokens: [5, 6], finishReason: undefined });
  assert.deepEqual(parseTrtllmChunk(URL, chunk({ token_ids: [7], finish_reason: "length" })), {
    tokens: [7],
    finishReason: "length",
  });
  assert.deepEqual(parseTrtllmChunk(URL, chunk({ token_ids: [], finish_reason: "stop", stop_reason: 9 })).finishReason, "stop");
  const usage = JSON.stringify({
    id: "cmpl-7",
    object: "text_completion",
    created: 1,
    model: "m",
    choices: [],
    usage: { prompt_tokens: 40, total_tokens: 42, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 32 } },
  });
  assert.deepEqual(parseTrtllmChunk(URL, usage), { tokens: [], finishReason: undefined, cachedTokens: 32 });
  assert.deepEqual(parseTrtllmChunk(URL, "[DONE]"), { tokens: [], done: true });
});

test("text without token ids, a timeout, an error event and an unknown finish fail the request naming the server", () => {
  assert.throws(
    () => parseTrtllmChunk(URL, chunk({ text: "Hi", token_ids: null })),
    /trtllm at http:\/\/trt:8000 sent .*detokenize: false/,
  );
  assert.throws(() => parseTrtllmChunk(URL, chunk({ finish_reason: "timeout" })), /timed the request out/);
  assert.throws(
    () => parseTrtllmChunk(URL, JSON.stringify({ error: { message: "boom", type: "server_error", code: null, param: null } })),
    /failed the request: boom/,
  );
  assert.throws(() => parseTrtllmChunk(URL, chunk({ finish_reason: "eaten" })), /a finish_reason "eaten"/);
  assert.throws(() => parseTrtllmChunk(URL, "{"), /not JSON/);
});

test("the load is read from TensorRT-LLM's gauges, each where present", () => {
  const text = [
    'trtllm_num_requests_running{model_name="m",engine_type="pytorch"} 3.0',
    'trtllm_num_requests_waiting{model_name="m",engine_type="pytorch"} 1.0',
    'trtllm_kv_cache_used_blocks{model_name="m",engine_type="pytorch"} 120.0',
  ].join("\n");
  assert.deepEqual(trtllmLoad(text), { activeRequests: 3, waitingRequests: 1, activeKvBlocks: 120 });
  assert.deepEqual(trtllmLoad("trtllm_num_requests_running 2\n"), { activeRequests: 2 });
});
