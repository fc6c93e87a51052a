import assert from "node:assert/strict";
import { test } from "node:test";
import { type EngineAdapters, MockerEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import type { GenerateRequest } from "../protocol/index.js";
import { createEmbeddedRuntime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import { roundRobinPolicy } from "./basic-policies.js";
import { Router } from "./router.js";

/** The adapters a mocker worker claims to serve: the router reads only the names on its card. */
function adapterNames(initial: readonly string[]): EngineAdapters {
  const names = [...initial];
  const listeners = new Set<() => void>();
  return {
    names: () => names,
    add: async (name) => {
      names.push(name);
      for (const listener of listeners) listener();
    },
    remove: async (name) => {
      names.splice(names.indexOf(name), 1);
      for (const listener of listeners) listener();
    },
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

function mockerWith(adapters: EngineAdapters): MockerEngine {
  return Object.assign(new MockerEngine({ speedupRatio: 1000 }), { adapters });
}

function request(lora?: string): GenerateRequest {
  return {
    type: "generate-request",
    requestId: "r",
    model: "m",
    ...(lora === undefined ? {} : { lora }),
    tokenIds: [1, 2, 3, 4, 5],
    sampling: { temperature: 0 },
    maxTokens: 2,
  };
}

test("a request for an adapter goes only to workers whose card lists it, also after one adds it at run time", async () => {
  const runtime = createEmbeddedRuntime();
  const river = adapterNames([]);
  const workers = await Promise.all([
    WorkerHost.create({ runtime, id: "w1", engine: mockerWith(adapterNames(["sea"])), modelName: "m", logger: silentLogger }),
    WorkerHost.create({ runtime, id: "w2", engine: mockerWith(river), modelName: "m", logger: silentLogger }),
  ]);
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger });
  const servedBy = async (lora?: string): Promise<string> => {
    const call = await router.route(request(lora), { signal: new AbortController().signal });
    for await (const _ of call.stream) {
      /* drain */
    }
    return call.workerId;
  };
  try {
    assert.deepEqual(router.workers.adapters(), new Map([["sea", "m"]]));
    assert.deepEqual(workers[0]?.card.kinds, ["chat"], "the mocker computes no embeddings");
    const seaWorkers = new Set([await servedBy("sea"), await servedBy("sea"), await servedBy("sea")]);
    assert.deepEqual([...seaWorkers], ["w1"]);
    assert.deepEqual(new Set([await servedBy(), await servedBy()]), new Set(["w1", "w2"]), "the base model runs on both");
    await assert.rejects(router.route(request("river"), { signal: new AbortController().signal }), {
      code: "ROUTER_NO_WORKER",
      message: /LoRA adapter river of model m/,
    });

    await river.add("river", "/unused", "lora_path");
    // The worker registered its new card again; discovery tells the router.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(workers[1]?.card.loras, ["river"]);
    assert.equal(await servedBy("river"), "w2");
    assert.equal(router.workers.adapterParent("river"), "m");
    await river.remove("river");
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(workers[1]?.card.loras, undefined);
    assert.equal(router.workers.adapterParent("river"), undefined);
  } finally {
    router.close();
    await Promise.all(workers.map((w) => w.close(1000)));
    await runtime.close();
  }
});

test("among workers that serve an adapter, the one that has it loaded takes its requests while it is not busy", async () => {
  const runtime = createEmbeddedRuntime();
  const resident = (names: readonly string[]): MockerEngine => {
    const engine = mockerWith(adapterNames(["sea", "river"]));
    const load = engine.load.bind(engine);
    return Object.assign(engine, { load: () => ({ ...load(), residentLoras: names }) });
  };
  const workers = await Promise.all([
    WorkerHost.create({
      runtime,
      id: "w1",
      engine: resident(["river"]),
      modelName: "m",
      logger: silentLogger,
      loadIntervalMs: 5,
    }),
    WorkerHost.create({ runtime, id: "w2", engine: resident(["sea"]), modelName: "m", logger: silentLogger, loadIntervalMs: 5 }),
  ]);
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger });
  try {
    while (!router.workers.all().every((w) => w.published !== undefined)) await new Promise((r) => setTimeout(r, 5));
    const servedBy = async (lora: string): Promise<string> => {
      const call = await router.route(request(lora), { signal: new AbortController().signal });
      for await (const _ of call.stream) {
        /* drain */
      }
      return call.workerId;
    };
    assert.deepEqual([await servedBy("sea"), await servedBy("sea"), await servedBy("sea")], ["w2", "w2", "w2"]);
    assert.deepEqual([await servedBy("river"), await servedBy("river")], ["w1", "w1"]);
  } finally {
    router.close();
    await Promise.all(workers.map((w) => w.close(1000)));
    await runtime.close();
  }
});
