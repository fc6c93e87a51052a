import assert from "node:assert/strict";
import { test } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { FakeKubernetesApi, type FakeKubernetesApiOptions } from "../../../test/helpers/fake-kubernetes-api.js";
import { isArmatureError } from "../../protocol/index.js";
import { KubernetesConnector } from "./kubernetes-connector.js";
import { scalingConnectorContract } from "./scaling-connector-contract.js";

// The API server here is FakeKubernetesApi, written from the Kubernetes API reference (Deployment
// scale subresource, autoscaling/v1 Scale, Status errors); no real cluster was available.
const TOKEN = "planner-token";
const NS = "serving";

function kubeConfig(server: string, token = TOKEN): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: "fake", server, skipTLSVerify: true }],
    users: [{ name: "planner", token }],
    contexts: [{ name: "fake", cluster: "fake", user: "planner", namespace: NS }],
    currentContext: "fake",
  });
  return config;
}

async function setup(overrides: Partial<FakeKubernetesApiOptions> = {}) {
  const api = await FakeKubernetesApi.start({
    token: TOKEN,
    deployments: [
      { namespace: NS, name: "llama-prefill" },
      { namespace: NS, name: "llama-decode" },
    ],
    ...overrides,
  });
  const connect = (options: { token?: string; requestTimeoutMs?: number } = {}) =>
    KubernetesConnector.create({
      kubeConfig: kubeConfig(api.url, options.token),
      deployments: { prefill: "llama-prefill", decode: "llama-decode" },
      ...(options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    });
  return { api, connect };
}

scalingConnectorContract("kubernetes", async () => {
  const { api, connect } = await setup();
  const connector = await connect();
  return {
    connector,
    roles: ["prefill", "decode"],
    missingRole: "aggregated",
    settleMs: 500,
    passTime: (ms) => new Promise<void>((r) => setTimeout(r, ms)),
    close: async () => {
      await connector.close();
      await api.close();
    },
  };
});

test("the connector reads and patches the Deployment's scale subresource as the API reference documents", async () => {
  const { api, connect } = await setup();
  try {
    const connector = await connect();
    assert.equal(connector.namespace, NS, "the kubeconfig context's namespace");
    await connector.scale("decode", 3);
    const scalePath = `/apis/apps/v1/namespaces/${NS}/deployments/llama-decode/scale`;
    const patches = api.requests.filter((r) => r.method === "PATCH");
    assert.deepEqual(patches, [
      {
        method: "PATCH",
        path: scalePath,
        query: { fieldManager: "armature-planner" },
        contentType: "application/merge-patch+json",
        authorization: `Bearer ${TOKEN}`,
        body: { spec: { replicas: 3 } },
      },
    ]);
    api.requests.length = 0;
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await connector.replicas("decode"), { desired: 3, ready: 3 });
    const reads = api.requests.map((r) => `${r.method} ${r.path}`).sort();
    assert.deepEqual(reads, [`GET /apis/apps/v1/namespaces/${NS}/deployments/llama-decode`, `GET ${scalePath}`]);
    assert.ok(
      api.requests.every((r) => r.authorization === `Bearer ${TOKEN}` && r.body === undefined),
      "reads carry the token and no body",
    );
  } finally {
    await api.close();
  }
});

test("create reads each Deployment's scale once, so a wrong name fails at once with CONFIG_INVALID", async () => {
  const { api, connect } = await setup({ deployments: [{ namespace: NS, name: "llama-prefill" }] });
  try {
    await assert.rejects(connect(), (error) => {
      assert.ok(isArmatureError(error) && error.code === "CONFIG_INVALID");
      assert.match(error.message, /llama-decode.*deployments\.decode.*namespace "serving".*not found/);
      return true;
    });
    assert.deepEqual(
      api.requests.map((r) => `${r.method} ${r.path}`),
      [
        `GET /apis/apps/v1/namespaces/${NS}/deployments/llama-prefill/scale`,
        `GET /apis/apps/v1/namespaces/${NS}/deployments/llama-decode/scale`,
      ],
    );
  } finally {
    await api.close();
  }
});

test("a refused token or a missing permission is CONFIG_INVALID and says which RBAC to grant", async () => {
  const { api, connect } = await setup({ forbidden: ["PATCH llama-decode"] });
  try {
    await assert.rejects(connect({ token: "wrong" }), (error) => isArmatureError(error) && error.code === "CONFIG_INVALID");
    const connector = await connect();
    await assert.rejects(connector.scale("decode", 2), (error) => {
      assert.ok(isArmatureError(error) && error.code === "CONFIG_INVALID" && !error.retryable);
      assert.match(error.message, /cannot patch resource "deployments\/scale".*grant get and patch on deployments\/scale/);
      return true;
    });
    assert.equal((await connector.replicas("decode")).desired, 0, "nothing changed");
  } finally {
    await api.close();
  }
});

test("an API server that is down or hangs gives a retryable WORKER_UNAVAILABLE, after the request timeout", async () => {
  const { api, connect } = await setup({ hang: [`/apis/apps/v1/namespaces/${NS}/deployments/llama-decode/scale`] });
  try {
    await assert.rejects(connect({ requestTimeoutMs: 200 }), (error) => {
      assert.ok(isArmatureError(error) && error.code === "WORKER_UNAVAILABLE" && error.retryable);
      assert.match(error.message, /did not answer in 200 ms/);
      return true;
    });
  } finally {
    await api.close();
  }
  const closed = kubeConfig(api.url);
  await assert.rejects(
    KubernetesConnector.create({ kubeConfig: closed, deployments: { decode: "llama-decode" } }),
    (error) => isArmatureError(error) && error.code === "WORKER_UNAVAILABLE" && error.retryable,
  );
});
