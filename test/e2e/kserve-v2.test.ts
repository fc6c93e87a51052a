import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type ServiceError, status } from "@grpc/grpc-js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { freePort } from "../helpers/free-port.js";
import { KSERVE_FIXTURES, KserveGrpcClient } from "../helpers/kserve-grpc-client.js";
import { sseData } from "../helpers/openai-spec.js";
import { specSchemas } from "../helpers/spec-schemas.js";

// `armature serve` (llamacpp, the generated tiny model) with --grpc-port and an API key: KServe
// v2 REST checked against the Open Inference Protocol's schemas and the generate extension's,
// gRPC through clients built from the protocol's own protos (the OIP proto; Triton's for
// ModelStreamInfer, which OIP does not define).
const oip = specSchemas(join(KSERVE_FIXTURES, "open_inference_rest.json"));
const generateSpec = specSchemas(join(KSERVE_FIXTURES, "generate_rest.json"));
const MODEL = "armature-tiny";
const KEY = "kserve-test-key";
const PROMPT = "Once upon a time";
const GREEDY = { temperature: 0, max_tokens: 8, ignore_eos: true };

let server: ServeProcess;
let grpcPort: number;
let unaryClient: KserveGrpcClient;
let streamClient: KserveGrpcClient;

before(async () => {
  grpcPort = await freePort();
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "256", "--grpc-port", String(grpcPort), "--api-key", KEY], {
    ARMATURE_CACHE_DIR: cacheDir,
  });
  unaryClient = new KserveGrpcClient("open_inference_grpc.proto", grpcPort);
  streamClient = new KserveGrpcClient("grpc_service.proto", grpcPort);
});
after(async () => {
  unaryClient?.close();
  streamClient?.close();
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

async function call(method: string, path: string, body?: unknown, key: string | null = KEY): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

function textInput(text: string): Record<string, unknown> {
  return { name: "text_input", datatype: "BYTES", shape: [1], data: [text] };
}

async function inferText(parameters: Record<string, unknown>): Promise<string> {
  const res = await call("POST", `/v2/models/${MODEL}/infer`, { inputs: [textInput(PROMPT)], parameters });
  const body = (await res.json()) as { outputs: { name: string; data: string[] }[] };
  return body.outputs.find((o) => o.name === "text_output")?.data[0] as string;
}

/** A KServe error: the status, `{"error": string}`, and every word of `names` in the message. */
async function assertRefused(res: Response, statusCode: number, names: readonly string[]): Promise<void> {
  const body = (await res.json()) as { error: string };
  assert.equal(res.status, statusCode, JSON.stringify(body));
  oip("inference_error_response", body);
  assert.equal(typeof body.error, "string");
  for (const name of names) assert.ok(body.error.includes(name), `'${name}' not named in: ${body.error}`);
}

test("health, server and model metadata answer as the protocol says", async () => {
  // Probes need no key, as /health and /live.
  assert.equal((await call("GET", "/v2/health/live", undefined, null)).status, 200);
  assert.equal((await call("GET", "/v2/health/ready", undefined, null)).status, 200);
  const health = (await (await fetch(`${server.url}/health`)).json()) as { grpc_port: number };
  assert.equal(health.grpc_port, grpcPort);

  const meta = (await (await call("GET", "/v2")).json()) as { name: string; extensions: string[] };
  oip("metadata_server_response", meta);
  assert.equal(meta.name, "armature");
  assert.ok(meta.extensions.includes("generate"));

  const model = await (await call("GET", `/v2/models/${MODEL}`)).json();
  oip("metadata_model_response", model);
  assert.deepEqual((model as { inputs: unknown }).inputs, [
    { name: "text_input", datatype: "BYTES", shape: [1] },
    { name: "streaming", datatype: "BOOL", shape: [1] },
  ]);
  assert.equal((await call("GET", `/v2/models/${MODEL}/ready`)).status, 200);
  assert.notEqual((await call("GET", "/v2/models/no-such-model/ready")).status, 200);
  const missing = await call("GET", "/v2/models/no-such-model");
  assert.equal(missing.status, 404);
  oip("metadata_model_error_response", await missing.json());
  // Without a key: 401 in KServe's error shape.
  await assertRefused(await call("GET", "/v2", undefined, null), 401, ["API key"]);
});

test("infer returns text_output and finish_reason, the same text /v1/completions gives at temperature 0", async () => {
  const res = await call("POST", `/v2/models/${MODEL}/infer`, { id: "42", inputs: [textInput(PROMPT)], parameters: GREEDY });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { id: string; model_name: string; outputs: { name: string; data: string[] }[] };
  oip("inference_response", body);
  assert.equal(body.id, "42");
  assert.equal(body.model_name, MODEL);
  assert.deepEqual(
    body.outputs.map((o) => [o.name, o.data.length]),
    [
      ["text_output", 1],
      ["finish_reason", 1],
    ],
  );
  // 8 tokens asked for, end-of-sequence ignored: the limit ends it.
  assert.equal(body.outputs[1]?.data[0], "length");
  const completion = (await (
    await call("POST", "/v1/completions", { model: MODEL, prompt: PROMPT, max_tokens: 8, temperature: 0, ignore_eos: true })
  ).json()) as { choices: { text: string }[] };
  assert.equal(body.outputs[0]?.data[0], completion.choices[0]?.text);

  // Asked for one output, only that one comes back.
  const one = await call("POST", `/v2/models/${MODEL}/infer`, {
    inputs: [textInput(PROMPT), { name: "streaming", datatype: "BOOL", shape: [1], data: [false] }],
    outputs: [{ name: "finish_reason" }],
    parameters: GREEDY,
  });
  const oneBody = (await one.json()) as { outputs: { name: string }[] };
  oip("inference_response", oneBody);
  assert.deepEqual(
    oneBody.outputs.map((o) => o.name),
    ["finish_reason"],
  );
});

test("generate and generate_stream conform and give the text infer gives", async () => {
  const expected = await inferText(GREEDY);
  const res = await call("POST", `/v2/models/${MODEL}/generate`, { text_input: PROMPT, parameters: GREEDY });
  const body = (await res.json()) as { text_output: string; model_name: string };
  assert.equal(res.status, 200, JSON.stringify(body));
  generateSpec("GenerateResponse", body);
  assert.equal(body.text_output, expected);
  assert.equal(body.model_name, MODEL);
  // Triton's form: parameters at the top level.
  const flat = (await (await call("POST", `/v2/models/${MODEL}/generate`, { text_input: PROMPT, ...GREEDY })).json()) as {
    text_output: string;
  };
  assert.equal(flat.text_output, expected);

  const stream = await call("POST", `/v2/models/${MODEL}/generate_stream`, { id: "s1", text_input: PROMPT, parameters: GREEDY });
  assert.equal(stream.status, 200);
  assert.match(stream.headers.get("content-type") ?? "", /^text\/event-stream/);
  const events = sseData(await stream.text()).map((e) => JSON.parse(e) as Record<string, unknown>);
  assert.ok(events.length > 2, "one event per piece of text, then the end");
  for (const event of events) {
    generateSpec("GenerateStreamResponse", event);
    assert.equal(event.id, "s1");
  }
  assert.equal(events.map((e) => e.text_output).join(""), expected);
  assert.equal(events.at(-1)?.finish_reason, "length");
  assert.equal(events.filter((e) => "finish_reason" in e).length, 1);
});

test("every refused input, output, parameter and path names what it refuses", async () => {
  const infer = (body: unknown, model = MODEL): Promise<Response> => call("POST", `/v2/models/${model}/infer`, body);
  await assertRefused(await infer({ inputs: [textInput(PROMPT)] }, "no-such-model"), 404, ["no-such-model"]);
  await assertRefused(await infer({ inputs: [] }), 400, ["text_input"]);
  await assertRefused(await infer({ inputs: [{ name: "text_input", datatype: "INT32", shape: [1], data: [7] }] }), 400, [
    "text_input",
    "BYTES",
    "INT32",
  ]);
  await assertRefused(await infer({ inputs: [textInput(PROMPT)], parameters: { beam_width: 2 } }), 400, ["beam_width"]);
  await assertRefused(await infer({ inputs: [textInput(PROMPT)], parameters: { temperature: "warm" } }), 400, ["temperature"]);
  await assertRefused(
    await infer({ inputs: [textInput(PROMPT), { name: "bad_words", datatype: "BYTES", shape: [1], data: [""] }] }),
    400,
    ["bad_words"],
  );
  await assertRefused(await infer({ inputs: [textInput(PROMPT)], outputs: [{ name: "logits" }] }), 400, ["logits"]);
  await assertRefused(
    await infer({ inputs: [textInput(PROMPT)], outputs: [{ name: "text_output", parameters: { binary_data: true } }] }),
    400,
    ["binary_data"],
  );
  await assertRefused(
    await infer({ inputs: [textInput(PROMPT), { name: "streaming", datatype: "BOOL", shape: [1], data: [true] }] }),
    400,
    ["streaming", "generate_stream"],
  );
  await assertRefused(await infer({ inputs: [textInput(PROMPT)], priority: 1 }), 400, ["priority"]);
  await assertRefused(await call("POST", `/v2/models/${MODEL}/versions/1/infer`, { inputs: [textInput(PROMPT)] }), 400, [
    "versions",
  ]);
  const generate = `/v2/models/${MODEL}/generate`;
  await assertRefused(await call("POST", generate, { text_input: PROMPT, parameters: { details: true } }), 400, ["details"]);
  await assertRefused(await call("POST", generate, { text_input: PROMPT, parameters: { stream: true } }), 400, ["stream"]);
  await assertRefused(await call("POST", generate, { text_input: PROMPT, max_tokens: 2, parameters: { max_tokens: 3 } }), 400, [
    "max_tokens",
  ]);
  await assertRefused(await call("POST", generate, { parameters: {} }), 400, ["text_input"]);
  await assertRefused(await call("GET", `/v2/models/${MODEL}/infer`), 405, ["GET"]);
});

function unary(method: string, request: unknown, key: string | null = KEY): Promise<Record<string, unknown>> {
  return unaryClient.unary(method, request, key);
}

function grpcRequest(text: string | Buffer, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model_name: MODEL,
    inputs: [{ name: "text_input", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from(text)] } }],
    parameters: {
      temperature: { double_param: 0 },
      max_tokens: { int64_param: 8 },
      ignore_eos: { bool_param: true },
    },
    ...extra,
  };
}

function outputs(response: Record<string, unknown>): Record<string, string> {
  const tensors = response.outputs as { name: string; contents: { bytes_contents: Buffer[] } }[];
  return Object.fromEntries(tensors.map((t) => [t.name, t.contents.bytes_contents.map((b) => b.toString("utf8")).join("")]));
}

test("gRPC: live, ready, metadata, and ModelInfer with contents or raw bytes gives the REST infer's text", async () => {
  assert.deepEqual(await unary("ServerLive", {}, null), { live: true });
  assert.deepEqual(await unary("ServerReady", {}, null), { ready: true });
  const meta = await unary("ServerMetadata", {});
  assert.equal(meta.name, "armature");
  assert.ok((meta.extensions as string[]).includes("generate"));
  assert.deepEqual(await unary("ModelReady", { name: MODEL }), { ready: true });
  assert.deepEqual(await unary("ModelReady", { name: "no-such-model" }), { ready: false });
  const model = await unary("ModelMetadata", { name: MODEL });
  assert.deepEqual(
    (model.outputs as { name: string; datatype: string }[]).map((o) => [o.name, o.datatype]),
    [
      ["text_output", "BYTES"],
      ["finish_reason", "BYTES"],
    ],
  );

  const expected = await inferText(GREEDY);
  const viaContents = await unary("ModelInfer", grpcRequest(PROMPT, { id: "g1" }));
  assert.equal(viaContents.id, "g1");
  assert.deepEqual(outputs(viaContents), { text_output: expected, finish_reason: "length" });
  // Raw form: each BYTES element behind its 4-byte little-endian length (Triton's layout).
  const bytes = Buffer.from(PROMPT);
  const raw = Buffer.concat([Buffer.from([bytes.length, 0, 0, 0]), bytes]);
  const request = grpcRequest("", { raw_input_contents: [raw] });
  (request.inputs as Record<string, unknown>[])[0] = { name: "text_input", datatype: "BYTES", shape: [1] };
  assert.deepEqual(outputs(await unary("ModelInfer", request)), { text_output: expected, finish_reason: "length" });
});

test("gRPC errors carry their status and name the field", async () => {
  const refused = async (request: unknown, code: status, names: readonly string[], key: string | null = KEY): Promise<void> => {
    const error = (await unary("ModelInfer", request, key).then(
      () => assert.fail("expected an error"),
      (e: unknown) => e,
    )) as ServiceError;
    assert.equal(error.code, code, error.details);
    for (const name of names) assert.ok(error.details.includes(name), `'${name}' not named in: ${error.details}`);
  };
  await refused(grpcRequest(PROMPT, { model_name: "no-such-model" }), status.NOT_FOUND, ["no-such-model"]);
  await refused(grpcRequest(PROMPT, { inputs: [] }), status.INVALID_ARGUMENT, ["text_input"]);
  await refused(
    grpcRequest(PROMPT, { inputs: [{ name: "text_input", datatype: "FP32", shape: [1], contents: { fp32_contents: [1] } }] }),
    status.INVALID_ARGUMENT,
    ["text_input", "BYTES", "FP32"],
  );
  await refused(grpcRequest(PROMPT, { parameters: { beam_width: { int64_param: 2 } } }), status.INVALID_ARGUMENT, ["beam_width"]);
  await refused(grpcRequest(PROMPT, { model_version: "3" }), status.INVALID_ARGUMENT, ["model_version"]);
  await refused(grpcRequest(PROMPT), status.UNAUTHENTICATED, ["API key"], null);
  await refused(grpcRequest(PROMPT), status.UNAUTHENTICATED, ["API key"], "wrong-key");
  // Priority and deadline come as metadata, as the HTTP routes take them as headers.
  const malformed: [string, string][] = [
    ["x-armature-priority", "urgent"],
    ["x-armature-deadline-ms", "0"],
  ];
  for (const [name, value] of malformed) {
    const error = (await unaryClient.unary("ModelInfer", grpcRequest(PROMPT), KEY, { [name]: value }).then(
      () => assert.fail("expected an error"),
      (e: unknown) => e,
    )) as ServiceError;
    assert.equal(error.code, status.INVALID_ARGUMENT, error.details);
    assert.ok(error.details.includes(name), error.details);
  }
  assert.ok(await unaryClient.unary("ModelInfer", grpcRequest(PROMPT), KEY, { "x-armature-priority": "-3" }));
});

test("gRPC ModelStreamInfer (Triton's proto) streams pieces when streaming is true, one response otherwise", async () => {
  const expected = await inferText(GREEDY);
  const streaming = { name: "streaming", datatype: "BOOL", shape: [1], contents: { bool_contents: [true] } };
  const streamed = grpcRequest(PROMPT, { id: "a" });
  (streamed.inputs as unknown[]).push(streaming);
  const responses = await streamClient.streamInfer(
    [
      streamed,
      grpcRequest(PROMPT, { id: "b", parameters: { nonsense: { bool_param: true } } }),
      grpcRequest(PROMPT, { id: "c" }),
    ],
    KEY,
  );

  const ofA = responses.filter((r) => (r.infer_response as { id: string } | null)?.id === "a");
  assert.ok(ofA.length > 2, "one response per piece of text, then the end");
  const pieces = ofA.map((r) => outputs(r.infer_response as Record<string, unknown>));
  assert.equal(pieces.map((p) => p.text_output).join(""), expected);
  assert.equal(pieces.at(-1)?.finish_reason, "length");
  // A failed request answers with error_message and the stream goes on.
  const failed = responses.filter((r) => r.error_message !== "");
  assert.equal(failed.length, 1);
  assert.match(failed[0]?.error_message as string, /nonsense/);
  const ofC = responses.filter((r) => (r.infer_response as { id: string } | null)?.id === "c");
  assert.equal(ofC.length, 1);
  assert.deepEqual(outputs(ofC[0]?.infer_response as Record<string, unknown>), {
    text_output: expected,
    finish_reason: "length",
  });
  // Without a key the call itself is refused.
  await assert.rejects(
    streamClient.streamInfer([grpcRequest(PROMPT)], null),
    (e: ServiceError) => e.code === status.UNAUTHENTICATED,
  );
});

test("a --grpc-port that is taken stops the start, naming the flag", async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const { port } = holder.address() as { port: number };
  try {
    const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
    await assert.rejects(
      startServe(["--context-size", "256", "--grpc-port", String(port)], { ARMATURE_CACHE_DIR: cacheDir }),
      (error: Error) => error.message.includes("exited with 1") && error.message.includes("--grpc-port"),
    );
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }
});
