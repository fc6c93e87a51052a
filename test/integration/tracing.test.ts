import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type ServeProcess, startArmature, startServe } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";
import { freePort } from "../helpers/free-port.js";
import { KserveGrpcClient } from "../helpers/kserve-grpc-client.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../helpers/otlp-receiver.js";

// Frontend and workers as separate processes over a real nats-server and etcd, each exporting its
// spans with OTLP/HTTP to a receiver here. Aggregated workers serve model `agg`; a prefill and a
// decode worker serve model `split` (the mocker's modelled KV handoff); two slow aggregated workers
// serve model `mig`, one of which is killed mid-stream.
let servers: ClusterServers;
let receiver: OtlpReceiver;
const processes: ServeProcess[] = [];

// The W3C Trace Context spec's own examples of a trace id and a parent id.
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const SPLIT_TRACE = "0af7651916cd43dd8448eb211c80319c";
const SPLIT_SPAN = "b7ad6b7169203331";
const MIGRATED_TRACE = "6bf92f3577b34da6a3ce929d0e0e4738";
const MESSAGES_TRACE = "7bf92f3577b34da6a3ce929d0e0e4739";
const GRPC_TRACE = "8bf92f3577b34da6a3ce929d0e0e473a";
let migration: { first: string; survivor: string } | undefined;
let messagesTraceHeader: string | null = null;

interface Answer {
  readonly traceId: string;
  readonly worker: string;
  readonly prefillWorker: string | null;
  readonly usage: { prompt_tokens: number; completion_tokens: number } | undefined;
}
const answers = new Map<string, Answer>();

before(async () => {
  servers = await startClusterServers();
  receiver = await startOtlpReceiver();
  const cluster = [...servers.flags, "--engine", "mocker", "--speedup-ratio", "100", "--otlp-endpoint", receiver.url];
  processes.push(await startArmature(["worker", ...cluster, "--model-name", "agg"]));
  processes.push(await startArmature(["worker", ...cluster, "--model-name", "split", "--role", "prefill"]));
  processes.push(await startArmature(["worker", ...cluster, "--model-name", "split", "--role", "decode"]));
  const slow = ["worker", ...cluster, "--model-name", "mig", "--speedup-ratio", "2"];
  const migrating = [await startArmature(slow), await startArmature(slow)];
  processes.push(...migrating);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--grpc-port", String(await freePort())]);
  processes.push(frontend);
  await waitForInstances(frontend.url, 5);
  const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const ask = async (name: string, model: string, headers: Record<string, string>): Promise<void> => {
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: "user", content: `trace me ${name}` }], max_tokens: 4 }, { headers })
      .withResponse();
    answers.set(name, {
      traceId: response.headers.get("x-armature-trace-id") ?? "",
      worker: response.headers.get("x-armature-worker") ?? "",
      prefillWorker: response.headers.get("x-armature-prefill-worker"),
      usage: data.usage,
    });
  };
  await ask("client", "agg", { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: "congo=t61rcWkgMzE" });
  await ask("split", "split", { traceparent: `00-${SPLIT_TRACE}-${SPLIT_SPAN}-01` });
  await ask("fresh", "agg", {});
  await ask("fresh again", "agg", {});
  // Uppercase hex is not a traceparent (W3C: lowercase only): ignored, as if none came.
  await ask("malformed", "agg", { traceparent: `00-${CLIENT_TRACE.toUpperCase()}-${CLIENT_SPAN}-01` });
  // Anthropic's Messages route goes through the same generation flow.
  const anthropic = new Anthropic({ baseURL: frontend.url, apiKey: "unused", maxRetries: 0 });
  const { response: messageResponse } = await anthropic.messages
    .create(
      { model: "agg", max_tokens: 4, messages: [{ role: "user", content: "trace me too" }] },
      { headers: { traceparent: `00-${MESSAGES_TRACE}-${CLIENT_SPAN}-01` } },
    )
    .withResponse();
  messagesTraceHeader = messageResponse.headers.get("x-armature-trace-id");
  // KServe's gRPC ModelInfer, its trace context in the call's metadata.
  const grpcPort = Number(/"grpc_port":(\d+)/.exec(await (await fetch(`${frontend.url}/health`)).text())?.[1]);
  const grpc = new KserveGrpcClient("open_inference_grpc.proto", grpcPort);
  await grpc.unary(
    "ModelInfer",
    {
      model_name: "agg",
      inputs: [
        { name: "text_input", datatype: "BYTES", shape: [1], contents: { bytes_contents: [Buffer.from("trace me by gRPC")] } },
      ],
      parameters: { max_tokens: { int64_param: 4 }, ignore_eos: { bool_param: true } },
    },
    null,
    { traceparent: `00-${GRPC_TRACE}-${CLIENT_SPAN}-01` },
  );
  grpc.close();
  // A worker killed mid-stream: the stream moves to the other, which joins the same trace.
  const { data: stream, response } = await client.completions
    .create(
      { model: "mig", prompt: "move me", max_tokens: 40, stream: true },
      { headers: { traceparent: `00-${MIGRATED_TRACE}-${CLIENT_SPAN}-01` } },
    )
    .withResponse();
  const first = response.headers.get("x-armature-worker") ?? "?";
  const victim = migrating.find((p) => p.output().includes(first)) as ServeProcess;
  let chunks = 0;
  for await (const _ of stream) if (++chunks === 3) victim.child.kill("SIGKILL");
  processes.splice(processes.indexOf(victim), 1);
  const survivor = migrating.find((p) => p !== victim) as ServeProcess;
  migration = { first, survivor: /armature worker (\S+)/.exec(survivor.output())?.[1] ?? "" };
  // Stopping flushes every process's buffered spans to the receiver.
  for (const process of processes.reverse()) assert.equal(await process.stop("SIGTERM"), 0, process.output());
});

after(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await receiver?.close();
  await servers?.stop();
});

function spansOf(traceId: string): Map<string, ReceivedSpan> {
  const spans = receiver.spans.filter((s) => s.traceId === traceId);
  const byName = new Map(spans.map((s) => [s.name, s]));
  assert.equal(byName.size, spans.length, `one span of each name in ${traceId}: ${spans.map((s) => s.name).join(", ")}`);
  return byName;
}

function span(spans: Map<string, ReceivedSpan>, name: string): ReceivedSpan {
  const found = spans.get(name);
  assert.ok(found, `a ${name} span among ${[...spans.keys()].join(", ")}`);
  return found;
}

test("a request with a client traceparent: its trace id in the header, six spans across frontend and worker, under the client's span", () => {
  const answer = answers.get("client");
  assert.equal(answer?.traceId, CLIENT_TRACE);
  const spans = spansOf(CLIENT_TRACE);
  assert.deepEqual([...spans.keys()].sort(), ["admit", "decode", "finish", "prefill", "route"]);
  const [admit, route, prefill, decode, finish] = ["admit", "route", "prefill", "decode", "finish"].map((n) =>
    span(spans, n),
  ) as [ReceivedSpan, ReceivedSpan, ReceivedSpan, ReceivedSpan, ReceivedSpan];
  for (const s of [admit, route, finish]) {
    assert.equal(s.service, "armature-frontend", s.name);
    assert.equal(s.parentSpanId, CLIENT_SPAN, `${s.name} is a child of the client's span`);
  }
  for (const s of [prefill, decode]) {
    assert.equal(s.service, "armature-worker", s.name);
    assert.equal(s.parentSpanId, route.spanId, `${s.name} is a child of the route span (carried over NATS)`);
  }
  // Each process's spans in the order the request went through them.
  assert.ok(admit.endNs <= route.startNs && route.endNs <= finish.startNs);
  assert.ok(prefill.endNs <= decode.startNs);
  assert.equal(route.attributes["armature.worker_id"], answer?.worker);
  assert.equal(prefill.attributes["gen_ai.usage.input_tokens"], answer?.usage?.prompt_tokens);
  assert.equal(decode.attributes["gen_ai.usage.output_tokens"], 4);
  assert.equal(finish.attributes["armature.finish_reason"], "length");
  assert.equal(finish.attributes["gen_ai.usage.output_tokens"], 4);
  assert.equal(admit.attributes["gen_ai.request.model"], "agg");
  assert.equal(spans.get("transfer"), undefined, "an aggregated request moves no KV");
});

test("a disaggregated request: prefill on the prefill worker, transfer and decode on the decode worker, all under route", () => {
  const answer = answers.get("split");
  assert.equal(answer?.traceId, SPLIT_TRACE);
  assert.ok(answer?.prefillWorker, "the request was split");
  const spans = spansOf(SPLIT_TRACE);
  assert.deepEqual([...spans.keys()].sort(), ["admit", "decode", "finish", "prefill", "route", "transfer"]);
  const route = span(spans, "route");
  const prefill = span(spans, "prefill");
  const transfer = span(spans, "transfer");
  const decode = span(spans, "decode");
  assert.equal(route.parentSpanId, SPLIT_SPAN);
  assert.equal(route.attributes["armature.prefill_worker_id"], answer?.prefillWorker);
  assert.equal(route.attributes["armature.worker_id"], answer?.worker);
  for (const s of [prefill, transfer, decode]) assert.equal(s.parentSpanId, route.spanId, s.name);
  assert.equal(prefill.attributes["armature.worker_id"], answer?.prefillWorker);
  assert.equal(prefill.attributes["armature.phase"], "prefill");
  assert.equal(transfer.attributes["armature.worker_id"], answer?.worker);
  assert.equal(transfer.attributes["armature.prefill_worker_id"], answer?.prefillWorker);
  assert.equal(typeof transfer.attributes["armature.transfer.backend"], "string");
  assert.ok(Number(transfer.attributes["armature.transfer.bytes"]) > 0);
  assert.ok(transfer.endNs <= decode.startNs);
  assert.equal(decode.attributes["armature.worker_id"], answer?.worker);
});

test("a request without traceparent, or with a malformed one, gets a new trace: its id in the header, admit its root", () => {
  const ids = ["fresh", "fresh again", "malformed"].map((name) => answers.get(name)?.traceId ?? "");
  for (const id of ids) {
    assert.match(id, /^[0-9a-f]{32}$/);
    assert.notEqual(id, "0".repeat(32));
  }
  assert.equal(new Set([...ids, CLIENT_TRACE]).size, 4, "each a new trace id");
  for (const id of ids) {
    const spans = spansOf(id);
    const admit = span(spans, "admit");
    assert.equal(admit.parentSpanId, "", "admit is the root");
    assert.equal(span(spans, "route").parentSpanId, admit.spanId);
    assert.equal(span(spans, "finish").parentSpanId, admit.spanId);
    assert.equal(span(spans, "prefill").parentSpanId, span(spans, "route").spanId);
  }
  assert.deepEqual(receiver.refused, []);
});

test("armature serve: the same spans, carried to its workers on the in-process request plane", async () => {
  const serve = await startServe(["--engine", "mocker", "--speedup-ratio", "100", "--otlp-endpoint", receiver.url]);
  const traceId = "5bf92f3577b34da6a3ce929d0e0e4737";
  const parent = "10f067aa0ba902b8";
  let header: string | null;
  try {
    const client = new OpenAI({ baseURL: `${serve.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const { response } = await client.completions
      .create(
        { model: "armature-mocker", prompt: "in one process", max_tokens: 3 },
        { headers: { traceparent: `00-${traceId}-${parent}-01` } },
      )
      .withResponse();
    header = response.headers.get("x-armature-trace-id");
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
  assert.equal(header, traceId);
  const spans = spansOf(traceId);
  assert.deepEqual([...spans.keys()].sort(), ["admit", "decode", "finish", "prefill", "route"]);
  const route = span(spans, "route");
  assert.equal(route.parentSpanId, parent);
  assert.equal(span(spans, "admit").attributes["armature.endpoint"], "completions");
  for (const name of ["prefill", "decode"]) {
    assert.equal(span(spans, name).parentSpanId, route.spanId, name);
    assert.equal(span(spans, name).service, "armature-worker", name);
  }
  assert.equal(route.service, "armature-frontend");
});

test("a stream moved to another worker mid-way: the new worker's spans join the same trace, under route", () => {
  assert.ok(migration && migration.survivor !== "" && migration.survivor !== migration.first);
  const spans = receiver.spans.filter((s) => s.traceId === MIGRATED_TRACE);
  const route = spans.find((s) => s.name === "route");
  assert.ok(route);
  assert.equal(route.attributes["armature.worker_id"], migration.first);
  // The killed worker's buffered spans died with it; the survivor's are exported.
  const decode = spans.find((s) => s.name === "decode");
  assert.equal(decode?.attributes["armature.worker_id"], migration.survivor);
  assert.equal(decode?.parentSpanId, route.spanId);
  assert.equal(spans.find((s) => s.name === "finish")?.attributes["gen_ai.usage.output_tokens"], 40);
});

test("KServe gRPC ModelInfer is traced the same way: its spans under the client's traceparent metadata, the worker's under route", () => {
  const spans = spansOf(GRPC_TRACE);
  assert.deepEqual([...spans.keys()].sort(), ["admit", "decode", "finish", "prefill", "route"]);
  assert.equal(span(spans, "admit").attributes["armature.endpoint"], "kserve_infer");
  assert.equal(span(spans, "admit").parentSpanId, CLIENT_SPAN);
  assert.equal(span(spans, "decode").parentSpanId, span(spans, "route").spanId);
  assert.equal(span(spans, "finish").attributes["gen_ai.usage.output_tokens"], 4);
});

test("POST /v1/messages is traced the same way: its spans under the client's, the worker's under route", () => {
  assert.equal(messagesTraceHeader, MESSAGES_TRACE);
  const spans = spansOf(MESSAGES_TRACE);
  assert.deepEqual([...spans.keys()].sort(), ["admit", "decode", "finish", "prefill", "route"]);
  assert.equal(span(spans, "admit").attributes["armature.endpoint"], "messages");
  assert.equal(span(spans, "admit").parentSpanId, CLIENT_SPAN);
  assert.equal(span(spans, "decode").parentSpanId, span(spans, "route").spanId);
  assert.equal(span(spans, "finish").attributes["gen_ai.usage.output_tokens"], 4);
});
