import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";
import { silentLogger } from "../observability/index.js";
import { createEmbeddedRuntime, type Discovery, type Runtime } from "../runtime/index.js";
import type { WorkerHost } from "../worker/index.js";
import { resolveServeOptions } from "./serve-options.js";
import { startWorkers } from "./start-workers.js";

/** The first frame a transfer listener sends: its hello, with a nonce when it wants a secret. */
async function helloOf(worker: WorkerHost): Promise<Record<string, unknown>> {
  const socket = connect({ host: "127.0.0.1", port: worker.transferAgent?.metadata.address.port as number });
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("error", () => undefined);
  try {
    for (const deadline = Date.now() + 2000; Date.now() < deadline; ) {
      const bytes = Buffer.concat(chunks);
      if (bytes.length >= 4 && bytes.length >= 4 + bytes.readUInt32LE(0)) {
        return JSON.parse(bytes.subarray(4, 4 + bytes.readUInt32LE(0)).toString()) as Record<string, unknown>;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error("no hello from the transfer listener");
  } finally {
    socket.destroy();
  }
}

// Regression: in one process the transfer port served anyone on the host without a secret.
test("armature serve (one process) gives its transfer agents a random secret", async () => {
  const runtime = createEmbeddedRuntime();
  const { workers } = await startWorkers(resolveServeOptions(["--engine", "mocker"], {}), runtime, silentLogger);
  try {
    const hello = await helloOf(workers[0] as WorkerHost);
    assert.equal(hello.op, "hello");
    assert.equal(typeof hello.nonce, "string", "the listener asks for a secret");
  } finally {
    await Promise.all(workers.map((w) => w.close(0)));
    await runtime.close();
  }
});

test("a worker bound beyond loopback without --transfer-secret refuses to start and names the flag", async () => {
  // Discovery shared with other processes (etcd in production): no secret is made up for it.
  const runtime = createEmbeddedRuntime();
  const distributed: Runtime = { ...runtime, discovery: {} as Discovery };
  await assert.rejects(
    startWorkers(resolveServeOptions(["--engine", "mocker", "--transfer-host", "0.0.0.0"], {}), distributed, silentLogger),
    { code: "CONFIG_INVALID", message: /--transfer-secret/ },
  );
  await runtime.close();
});

test("workers given a secret use it beyond loopback", async () => {
  const runtime = createEmbeddedRuntime();
  const secret = "s".repeat(40);
  const options = resolveServeOptions(["--engine", "mocker", "--transfer-host", "0.0.0.0"], { ARMATURE_TRANSFER_SECRET: secret });
  const { workers } = await startWorkers(options, runtime, silentLogger);
  try {
    assert.equal(typeof (await helloOf(workers[0] as WorkerHost)).nonce, "string");
  } finally {
    await Promise.all(workers.map((w) => w.close(0)));
    await runtime.close();
  }
});

test("sidecar flags out of place are refused by name before any engine is asked", async () => {
  const runtime = createEmbeddedRuntime();
  const refusal = (args: string[]) =>
    startWorkers(resolveServeOptions(args, {}), runtime, silentLogger).then(
      () => "started",
      (e: Error) => e.message,
    );
  const url = "http://127.0.0.1:1";
  try {
    assert.match(
      await refusal(["--engine", "mocker", "--tokenizer", "/models/m"]),
      /--tokenizer is for the engine servers \(--engine llama-server, vllm, sglang or trtllm\); --engine mocker runs its model in this process/,
    );
    assert.match(
      await refusal(["--engine", "llama-server", "--engine-url", url, "--tokenizer", "/models/m", "--model", "m.gguf"]),
      /--tokenizer and --model both name the model's tokenizer/,
    );
    assert.match(
      await refusal(["--engine", "sglang", "--engine-url", url]),
      /--tokenizer is needed: a sglang worker reads the model's tokenizer/,
    );
    assert.match(
      await refusal(["--engine", "llama-server", "--model", "m.gguf", "--engine-url", url, "--prefill-engine-url", url]),
      /--prefill-engine-url: llama-server workers serve aggregated only/,
    );
    assert.match(
      await refusal(["--engine", "llama-server", "--model", "m.gguf", "--engine-url", url, "--role", "decode"]),
      /--role decode: llama-server workers serve aggregated only/,
    );
    assert.match(
      await refusal(["--engine", "vllm", "--model", "m.gguf", "--engine-url", url, "--prefill", "1"]),
      /--prefill: engine-server workers prefill on the servers of --prefill-engine-url/,
    );
    assert.match(
      await refusal([
        "--engine",
        "vllm",
        "--model",
        "m.gguf",
        "--engine-url",
        url,
        "--prefill-engine-url",
        url,
        "--role",
        "prefill",
      ]),
      /--role and --prefill-engine-url: give one/,
    );
  } finally {
    await runtime.close();
  }
});

test("flags of another engine, and llama.cpp hardware flags that cannot be honoured, stop the workers' start naming the flag", async () => {
  const runtime = createEmbeddedRuntime();
  try {
    for (const [argv, message] of [
      [["--engine", "mocker", "--threads", "4"], /--threads is for --engine llamacpp; the mocker runs no llama\.cpp/],
      [
        ["--engine", "vllm", "--tokenizer", "t", "--engine-url", "http://127.0.0.1:9", "--threads", "4"],
        /--threads is for --engine llamacpp; vllm takes its own on its command line/,
      ],
      [["--speedup-ratio", "10"], /--speedup-ratio is for --engine mocker; llama\.cpp runs in real time/],
      [
        ["--engine", "sglang", "--tokenizer", "t", "--engine-url", "http://127.0.0.1:9", "--scheduling-policy", "priority"],
        /--scheduling-policy is for --engine mocker and vllm; sglang takes its own settings on its command line/,
      ],
      [
        ["--engine", "vllm", "--tokenizer", "t", "--engine-url", "http://127.0.0.1:9", "--speedup-ratio", "2"],
        /--speedup-ratio is for --engine mocker; vllm takes its own settings on its command line/,
      ],
      [
        ["--engine", "sglang", "--tokenizer", "t", "--engine-url", "http://127.0.0.1:9", "--sequences", "8"],
        /--sequences is for --engine llamacpp and mocker; sglang takes its own on its command line/,
      ],
      [
        ["--engine", "mocker", "--engine-url", "http://127.0.0.1:9"],
        /--engine-url is for the engine servers \(--engine llama-server, vllm, sglang or trtllm\); --engine mocker runs its model in this process/,
      ],
      [["--gpu", "off", "--gpu-layers", "max"], /--gpu-layers max: llama\.cpp runs on the CPU here \(--gpu off\)/],
    ] as const) {
      await assert.rejects(startWorkers(resolveServeOptions(argv, {}), runtime, silentLogger), {
        code: "CONFIG_INVALID",
        message,
      });
    }
    assert.equal((await runtime.discovery.list()).length, 0, "no worker registered");
  } finally {
    await runtime.close();
  }
});

test("--sequences sizes the mocker's batch as it sizes llama.cpp's; without it the mocker runs 256", async () => {
  const runtime = createEmbeddedRuntime();
  const started = [
    await startWorkers(resolveServeOptions(["--engine", "mocker", "--sequences", "3"], {}), runtime, silentLogger),
    await startWorkers(resolveServeOptions(["--engine", "mocker", "--model-name", "other"], {}), runtime, silentLogger),
  ];
  try {
    const cards = new Map((await runtime.discovery.list()).map((entry) => [entry.model, entry.card?.maxSequences]));
    assert.deepEqual([cards.get("armature-mocker"), cards.get("other")], [3, 256]);
  } finally {
    await Promise.all(started.flatMap((s) => s.workers).map((w) => w.close(0)));
    await runtime.close();
  }
});
