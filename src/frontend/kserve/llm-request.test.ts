import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import { type GrpcInferRequest, grpcInferFields } from "./grpc-tensors.js";
import { HONOURED_PARAMETERS, type InputTensor, llmGenerateRequest, llmInferRequest } from "./llm-request.js";

const docs = readFileSync(new URL("../../../docs/api.md", import.meta.url), "utf8");
const text: InputTensor = { name: "text_input", datatype: "BYTES", shape: [1], elements: ["Hi"], parameters: {} };

function refusal(run: () => unknown): { param: string | undefined; message: string } {
  try {
    run();
  } catch (error) {
    assert.ok(isArmatureError(error), String(error));
    return { param: error.param, message: error.message };
  }
  assert.fail("expected a refusal");
}

test("docs/api.md's KServe parameter table lists exactly the honoured parameters as honoured", () => {
  const section = docs.split("## KServe v2 / Open Inference Protocol")[1]?.split("\n## ")[0] ?? "";
  const rows = new Map([...section.matchAll(/^\| `([a-z_]+)` \| (\w+) \|/gm)].map((m) => [m[1] as string, m[2] as string]));
  const honoured = [...rows].filter(([, status]) => status === "honoured").map(([name]) => name);
  assert.deepEqual(honoured.sort(), [...HONOURED_PARAMETERS].sort());
});

test("each honoured parameter reaches the sampling fields; max_tokens defaults to the generate spec's 20", () => {
  const infer = (parameters: Record<string, string | number | boolean>) =>
    llmInferRequest("m", { id: undefined, inputs: [text], outputs: [], parameters }).params;
  assert.equal(infer({}).maxTokens, 20);
  assert.equal(infer({ max_tokens: 5 }).maxTokens, 5);
  assert.equal(infer({ temperature: 0 }).sampling.temperature, 0);
  assert.equal(infer({ top_p: 0.5 }).sampling.topP, 0.5);
  assert.equal(infer({ top_k: 3 }).sampling.topK, 3);
  assert.equal(infer({ min_p: 0.1 }).sampling.minP, 0.1);
  assert.equal(infer({ seed: 7 }).sampling.seed, 7);
  assert.deepEqual(infer({ stop: "." }).stop, ["."]);
  assert.equal(infer({ frequency_penalty: 1 }).sampling.frequencyPenalty, 1);
  assert.equal(infer({ presence_penalty: 1 }).sampling.presencePenalty, 1);
  assert.equal(infer({ repetition_penalty: 1.1 }).sampling.repetitionPenalty, 1.1);
  assert.equal(infer({ ignore_eos: true }).ignoreEos, true);
  assert.equal(refusal(() => infer({ beam_width: 2 })).param, "parameters.beam_width");
  assert.equal(refusal(() => infer({ max_tokens: 0 })).param, "max_tokens");
});

test("generate takes Triton's top-level parameters, and refuses stream against its route and details", () => {
  assert.equal(llmGenerateRequest("m", { text_input: "Hi", max_tokens: 4 }, false).params.maxTokens, 4);
  assert.equal(llmGenerateRequest("m", { text_input: "Hi", parameters: { stream: true } }, true).streaming, true);
  assert.equal(refusal(() => llmGenerateRequest("m", { text_input: "Hi", stream: true }, false)).param, "stream");
  assert.equal(refusal(() => llmGenerateRequest("m", { text_input: "Hi", details: true }, false)).param, "details");
  assert.equal(refusal(() => llmGenerateRequest("m", { text_input: "Hi", foo: 1 }, false)).param, "parameters.foo");
});

const grpcRequest = (inputs: GrpcInferRequest["inputs"], raw: Buffer[] = []): GrpcInferRequest => ({
  model_name: "m",
  model_version: "",
  id: "",
  parameters: { max_tokens: { parameter_choice: "int64_param", int64_param: 3 } },
  inputs,
  outputs: [],
  raw_input_contents: raw,
});

test("gRPC raw BYTES are length-prefixed elements; a cut-short element is refused naming the input", () => {
  const input = { name: "text_input", datatype: "BYTES", shape: [1], parameters: {}, contents: null };
  // Hand-made: 5 as a 4-byte little-endian length, then the 5 bytes of "hello".
  const raw = Buffer.from([5, 0, 0, 0, 0x68, 0x65, 0x6c, 0x6c, 0x6f]);
  const fields = grpcInferFields(grpcRequest([input], [raw]));
  assert.deepEqual(fields.inputs[0]?.elements, ["hello"]);
  assert.deepEqual(fields.parameters, { max_tokens: 3 });
  const short = Buffer.from([9, 0, 0, 0, 0x68]);
  assert.equal(refusal(() => grpcInferFields(grpcRequest([input], [short]))).param, "inputs.text_input");
  const bool = { name: "streaming", datatype: "BOOL", shape: [1], parameters: {}, contents: null };
  assert.equal(refusal(() => grpcInferFields(grpcRequest([input, bool], [raw]))).param, "raw_input_contents");
});
