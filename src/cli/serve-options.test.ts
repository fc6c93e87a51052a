import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { resolveServeOptions } from "./serve-options.js";

test("defaults match the documentation", () => {
  const o = resolveServeOptions([], {});
  assert.deepEqual(
    // Engine settings left unset take the engine's own default (the mocker's speed-up 1, fcfs, 256 sequences; llama.cpp's 4).
    [o.host, o.port, o.engine, o.workers, o.router, o.speedupRatio, o.schedulingPolicy, o.sequences],
    ["127.0.0.1", 8000, "llamacpp", 1, undefined, undefined, undefined, undefined],
  );
});

test("a flag beats its environment twin, which beats the config file", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-config-"));
  const config = join(dir, "armature.json");
  await writeFile(config, JSON.stringify({ port: 7000, workers: 3, engine: "mocker", "block-size": 32 }));
  const o = resolveServeOptions(["--port", "9000", "--config", config], { ARMATURE_PORT: "8500", ARMATURE_WORKERS: "2" });
  assert.deepEqual([o.port, o.workers, o.engine, o.blockSize], [9000, 2, "mocker", 32]);
});

test("bad values name the flag and its environment variable", () => {
  assert.throws(() => resolveServeOptions(["--workers", "zero"], {}), /--workers \(ARMATURE_WORKERS\) must be an integer/);
  assert.throws(
    () => resolveServeOptions([], { ARMATURE_ENGINE: "tgi" }),
    /--engine \(ARMATURE_ENGINE\) must be one of llamacpp, mocker, llama-server, vllm, sglang, trtllm, got 'tgi'/,
  );
  assert.throws(() => resolveServeOptions(["--bogus", "1"], {}), /Unknown option/);
});

test("a config file with unknown keys is refused", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-config-"));
  const config = join(dir, "bad.json");
  await writeFile(config, JSON.stringify({ prot: 1 }));
  assert.throws(() => resolveServeOptions(["--config", config], {}), /unknown keys prot/);
});

test("disaggregation, router and transfer settings parse, and bad ones are refused by name", () => {
  const o = resolveServeOptions(
    ["--prefill", "2", "--decode", "3", "--disagg-threshold", "512", "--kv-overlap-weight", "8", "--durable-kv-events", "on"],
    { ARMATURE_ROLE: "decode", ARMATURE_TRANSFER_HOST: "0.0.0.0", ARMATURE_ROUTER_TEMPERATURE: "0.5" },
  );
  assert.deepEqual(
    [
      o.prefillWorkers,
      o.decodeWorkers,
      o.disaggThreshold,
      o.kvOverlapWeight,
      o.routerTemperature,
      o.durableKvEvents,
      o.role,
      o.transferHost,
    ],
    [2, 3, 512, 8, 0.5, true, "decode", "0.0.0.0"],
  );
  assert.equal(resolveServeOptions([], {}).routerTemperature, undefined, "unset: the policy's 0");
  assert.equal(resolveServeOptions(["--kv-exclusive-factor", "4"], {}).kvExclusiveFactor, 4);
  assert.equal(resolveServeOptions([], { ARMATURE_KV_EXCLUSIVE_FACTOR: "1" }).kvExclusiveFactor, 1);
  assert.throws(
    () => resolveServeOptions(["--kv-exclusive-factor=0.5"], {}),
    /--kv-exclusive-factor \(ARMATURE_KV_EXCLUSIVE_FACTOR\) must be a number ≥ 1/,
  );
  assert.throws(
    () => resolveServeOptions(["--router-temperature=-1"], {}),
    /--router-temperature \(ARMATURE_ROUTER_TEMPERATURE\) must be a number ≥ 0/,
  );
  assert.throws(
    () => resolveServeOptions(["--role", "router"], {}),
    /--role \(ARMATURE_ROLE\) must be one of aggregated, prefill, decode/,
  );
  assert.throws(() => resolveServeOptions(["--prefill=-1"], {}), /--prefill \(ARMATURE_PREFILL\) must be an integer ≥ 0/);
  assert.throws(() => resolveServeOptions(["--decode", "0"], {}), /--decode \(ARMATURE_DECODE\) must be an integer ≥ 1/);
  assert.throws(() => resolveServeOptions(["--router", "remotely"], {}), /--router .* must be one of .*remote/);
});

test("--api-key repeats; ARMATURE_API_KEY is comma-separated; --metrics-require-key is a bare flag", () => {
  const o = resolveServeOptions(["--api-key", "k1", "--api-key", "k2", "--metrics-require-key"], { ARMATURE_API_KEY: "e1" });
  assert.deepEqual([o.apiKeys, o.metricsRequireKey, o.apiKeysFile], [["k1", "k2"], true, undefined]);
  const e = resolveServeOptions([], { ARMATURE_API_KEY: "e1,e2,", ARMATURE_API_KEYS_FILE: "/k.yaml" });
  assert.deepEqual([e.apiKeys, e.metricsRequireKey, e.apiKeysFile], [["e1", "e2"], false, "/k.yaml"]);
  assert.equal(resolveServeOptions([], { ARMATURE_METRICS_REQUIRE_KEY: "on" }).metricsRequireKey, true);
  assert.deepEqual(resolveServeOptions([], {}).apiKeys, []);
  assert.throws(
    () => resolveServeOptions([], { ARMATURE_METRICS_REQUIRE_KEY: "maybe" }),
    /--metrics-require-key \(ARMATURE_METRICS_REQUIRE_KEY\) must be on or off/,
  );
});

test("limits: body size, request deadline and KV export bounds, with their defaults", () => {
  const d = resolveServeOptions([], {});
  assert.deepEqual(
    [d.maxBodyBytes, d.requestTimeoutMs, d.maxKvExports, d.maxKvExportBytes, d.minSharedFreeBytes],
    [8 * 1024 * 1024, 600_000, undefined, undefined, undefined],
  );
  const o = resolveServeOptions(
    ["--max-body-bytes", "65536", "--request-timeout", "2.5", "--max-kv-exports", "3", "--max-kv-export-bytes", "1000000"],
    { ARMATURE_MIN_SHARED_FREE_BYTES: "0" },
  );
  assert.deepEqual(
    [o.maxBodyBytes, o.requestTimeoutMs, o.maxKvExports, o.maxKvExportBytes, o.minSharedFreeBytes],
    [65536, 2500, 3, 1_000_000, 0],
  );
  assert.equal(resolveServeOptions(["--request-timeout", "0"], {}).requestTimeoutMs, undefined, "0 turns the deadline off");
  assert.throws(
    () => resolveServeOptions(["--max-body-bytes", "10"], {}),
    /--max-body-bytes \(ARMATURE_MAX_BODY_BYTES\) must be an integer ≥ 1024/,
  );
});

test("--otlp-endpoint: off by default, an http(s) URL, anything else refused by name", () => {
  assert.equal(resolveServeOptions([], {}).otlpEndpoint, undefined);
  assert.equal(resolveServeOptions(["--otlp-endpoint", "http://localhost:4318"], {}).otlpEndpoint, "http://localhost:4318");
  assert.equal(
    resolveServeOptions([], { ARMATURE_OTLP_ENDPOINT: "https://otel.example:4318/v1/traces" }).otlpEndpoint,
    "https://otel.example:4318/v1/traces",
  );
  for (const bad of ["localhost:4318", "grpc://localhost:4317", "not a url"]) {
    assert.throws(
      () => resolveServeOptions(["--otlp-endpoint", bad], {}),
      /--otlp-endpoint \(ARMATURE_OTLP_ENDPOINT\) must be an http:\/\/ or https:\/\/ URL/,
      bad,
    );
  }
});

test("llama.cpp's hardware flags parse from flags and variables, and bad ones are refused by name", () => {
  const o = resolveServeOptions(
    ["--threads", "6", "--gpu", "cuda", "--gpu-layers", "20", "--batch-size", "256", "--flash-attention", "on"],
    { ARMATURE_KV_CACHE_TYPE: "q8_0" },
  );
  assert.deepEqual(o.llama, {
    threads: 6,
    gpu: "cuda",
    gpuLayers: 20,
    batchSize: 256,
    flashAttention: "on",
    kvCacheType: "q8_0",
  });
  assert.equal(resolveServeOptions(["--gpu-layers", "max"], {}).llama.gpuLayers, "max");
  assert.deepEqual(Object.values(resolveServeOptions([], {}).llama), [
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
  assert.throws(() => resolveServeOptions(["--threads", "0"], {}), /--threads \(ARMATURE_THREADS\) must be an integer ≥ 1/);
  assert.throws(
    () => resolveServeOptions(["--gpu", "rocm"], {}),
    /--gpu \(ARMATURE_GPU\) must be one of auto, cuda, vulkan, off/,
  );
  assert.throws(
    () => resolveServeOptions(["--gpu-layers", "all"], {}),
    /--gpu-layers \(ARMATURE_GPU_LAYERS\) must be a layer count or max/,
  );
  assert.throws(() => resolveServeOptions(["--kv-cache-type", "q4_0"], {}), /--kv-cache-type .* must be one of f16, q8_0/);
});

test("--model PATH=NAME is repeatable on llama.cpp: every model with its name, the first as model and modelName", () => {
  const o = resolveServeOptions(["--model", "/m/a.gguf=chat", "--model", "/m/b.gguf"], {});
  assert.deepEqual(o.models, [
    { path: "/m/a.gguf", name: "chat" },
    { path: "/m/b.gguf", name: undefined },
  ]);
  assert.deepEqual([o.model, o.modelName], ["/m/a.gguf", "chat"]);
  assert.deepEqual(resolveServeOptions(["--model", "/m/a.gguf"], {}).models, [{ path: "/m/a.gguf", name: undefined }]);
  assert.deepEqual(resolveServeOptions([], { ARMATURE_MODEL: "/m/a.gguf=x,/m/b.gguf=y" }).models.length, 2);
});

test("several models are refused, naming the flag, where they cannot be told apart or served", () => {
  const cases: [string[], RegExp][] = [
    [["--model", "/m/a.gguf", "--model", "/n/a.gguf"], /--model \(ARMATURE_MODEL\) serves two models as 'a'/],
    [["--model", "/m/a.gguf=x", "--model", "/m/b.gguf=x"], /serves two models as 'x'/],
    [["--model", "/m/a-v1.gguf", "--model", "/m/a-v2.gguf"], /serves two models as 'a'/],
    [
      ["--model", "/m/a.gguf", "--model", "/m/b.gguf", "--model-name", "n"],
      /--model-name \(ARMATURE_MODEL_NAME\) names one model/,
    ],
    [["--model", "/m/a.gguf", "--model", "/m/b.gguf", "--engine", "mocker"], /several models are served by --engine llamacpp/],
    [["--model", "/m/a.gguf=bad name"], /takes PATH or PATH=NAME/],
    [["--model", "/m/a.gguf=x", "--model-name", "y"], /both name the model/],
  ];
  for (const [argv, message] of cases) assert.throws(() => resolveServeOptions(argv, {}), message, argv.join(" "));
});

test("a TLS key without its certificate, or the reverse, is refused naming the missing flag and its variable", () => {
  assert.throws(() => resolveServeOptions([], { ARMATURE_TLS_KEY: "/k.pem" }), {
    code: "CONFIG_INVALID",
    message: /^--tls-cert \(ARMATURE_TLS_CERT\) is missing/,
  });
  assert.throws(() => resolveServeOptions(["--tls-cert", "/c.pem"], {}), {
    message: /^--tls-key \(ARMATURE_TLS_KEY\) is missing/,
  });
});

test("--lora takes NAME=PATH for llama.cpp with one model; other engines, several models and repeated names are refused by name", () => {
  const o = resolveServeOptions(["--lora", "sea=/a/sea.gguf", "--lora", "sql=/a/b=c.gguf", "--max-loras", "2"], {});
  assert.deepEqual(o.loras, [
    { name: "sea", path: "/a/sea.gguf" },
    { name: "sql", path: "/a/b=c.gguf" },
  ]);
  assert.equal(o.maxLoras, 2);
  // llama-server and sglang: names for the adapters the engine loaded itself.
  assert.deepEqual(resolveServeOptions(["--engine", "llama-server", "--lora", "a=/x.gguf"], {}).loras, [
    { name: "a", path: "/x.gguf" },
  ]);
  for (const [argv, message] of [
    [
      ["--engine", "mocker", "--lora", "a=/x"],
      /^--lora \(ARMATURE_LORA\) is for --engine llamacpp, llama-server, sglang and trtllm; the mocker runs no adapters/,
    ],
    [
      ["--engine", "vllm", "--lora", "a=/x"],
      /^--lora \(ARMATURE_LORA\) is for --engine llamacpp, llama-server, sglang and trtllm; vllm loads its adapters itself/,
    ],
    [
      ["--engine", "vllm", "--max-loras", "2"],
      /^--max-loras \(ARMATURE_MAX_LORAS\) is for --engine llamacpp; vllm loads its adapters itself/,
    ],
    [["--model", "/a=x", "--model", "/b=y", "--lora", "a=/l"], /^--lora \(ARMATURE_LORA\) adapts one model/],
    [["--lora", "sea"], /^--lora \(ARMATURE_LORA\) takes NAME=PATH/],
    [["--lora", "a=/x", "--lora", "a=/y"], /names two adapters 'a'/],
  ] as const) {
    assert.throws(() => resolveServeOptions(argv, {}), { code: "CONFIG_INVALID", message }, argv.join(" "));
  }
});
