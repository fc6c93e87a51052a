import type { AppsV1Api, KubeConfig, setHeaderOptions } from "@kubernetes/client-node";
import { ArmatureError, type WorkerRole } from "../../protocol/index.js";
import {
  checkReplicaCount,
  connectorClosed,
  type ReplicaCount,
  roleNotConfigured,
  type ScalingConnector,
} from "./scaling-connector.js";

type RequestOptions = ReturnType<typeof setHeaderOptions>;

export interface KubernetesConnectorOptions {
  /** The Deployment that runs each role's workers, e.g. `{ prefill: "llama-prefill", decode: "llama-decode" }`. */
  readonly deployments: Partial<Record<WorkerRole, string>>;
  /**
   * Default: the kubeconfig context's namespace, which in a pod is the service account's
   * (`/var/run/secrets/kubernetes.io/serviceaccount/namespace`); else `default`.
   */
  readonly namespace?: string;
  /** Default: `KubeConfig.loadFromDefault()`: the pod's service account in a cluster, else `KUBECONFIG` or `~/.kube/config`. */
  readonly kubeConfig?: KubeConfig;
  /** Recorded as the manager of the `spec.replicas` it sets. Default `armature-planner`. */
  readonly fieldManager?: string;
  /** How long one API call may take before it fails with a retryable `WORKER_UNAVAILABLE`. Default 10 s. */
  readonly requestTimeoutMs?: number;
}

/**
 * Scales one Deployment per role through its scale subresource (`autoscaling/v1` Scale):
 * `GET`/`PATCH /apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale`, the patch a JSON
 * merge patch `{"spec":{"replicas":N}}`. `ready` is the Deployment's `status.readyReplicas` (read
 * from the Deployment itself: a Scale's `status.replicas` counts pods that are not ready yet).
 *
 * Draining is Kubernetes's part: a removed pod gets SIGTERM, and `armature worker` drains on it
 * (stops taking requests, finishes its in-flight ones, deregisters, exits 0) within the pod's
 * `terminationGracePeriodSeconds`, which must exceed the worker's drain (30 s; 45 s at most).
 * Needs RBAC `get, patch` on `deployments/scale` and `get` on `deployments` in the namespace.
 */
export class KubernetesConnector implements ScalingConnector {
  readonly namespace: string;
  readonly #api: AppsV1Api;
  readonly #mergePatch: RequestOptions;
  readonly #o: Required<Omit<KubernetesConnectorOptions, "namespace" | "kubeConfig">>;
  readonly #server: string;
  #closed = false;

  private constructor(
    api: AppsV1Api,
    mergePatch: RequestOptions,
    namespace: string,
    server: string,
    options: KubernetesConnectorOptions,
  ) {
    this.#api = api;
    this.#mergePatch = mergePatch;
    this.namespace = namespace;
    this.#server = server;
    this.#o = {
      deployments: options.deployments,
      fieldManager: options.fieldManager ?? "armature-planner",
      requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    };
  }

  /**
   * Loads the client (on first use: it is large), finds the namespace, and reads each Deployment's
   * scale once, so a wrong name or missing permission fails here with `CONFIG_INVALID`.
   */
  static async create(options: KubernetesConnectorOptions): Promise<KubernetesConnector> {
    const client = await import("@kubernetes/client-node");
    const config = options.kubeConfig ?? defaultKubeConfig(new client.KubeConfig());
    const namespace = options.namespace ?? config.getContextObject(config.getCurrentContext())?.namespace ?? "default";
    const server = config.getCurrentCluster()?.server ?? "(no server in the kubeconfig)";
    const connector = new KubernetesConnector(
      config.makeApiClient(client.AppsV1Api),
      await mergePatchOptions(),
      namespace,
      server,
      options,
    );
    for (const role of Object.keys(options.deployments) as WorkerRole[]) await connector.#readScale(role);
    return connector;
  }

  async replicas(role: WorkerRole): Promise<ReplicaCount> {
    const name = this.#deployment(role);
    const [scale, deployment] = await Promise.all([
      this.#readScale(role),
      this.#call(role, "read", () => this.#api.readNamespacedDeployment({ name, namespace: this.namespace })),
    ]);
    return { desired: scale.spec?.replicas ?? 0, ready: deployment.status?.readyReplicas ?? 0 };
  }

  async scale(role: WorkerRole, count: number): Promise<void> {
    if (this.#closed) throw connectorClosed("kubernetes");
    const name = this.#deployment(role);
    checkReplicaCount(role, count);
    const body = { spec: { replicas: count } };
    const fieldManager = this.#o.fieldManager;
    await this.#call(role, "patch", () =>
      this.#api.patchNamespacedDeploymentScale({ name, namespace: this.namespace, body, fieldManager }, this.#mergePatch),
    );
  }

  /** Nothing runs in the background; later calls to `scale` are refused. */
  async close(): Promise<void> {
    this.#closed = true;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #deployment(role: WorkerRole): string {
    const name = this.#o.deployments[role];
    if (!name) throw roleNotConfigured("kubernetes", role, "deployments");
    return name;
  }

  #readScale(role: WorkerRole) {
    const name = this.#deployment(role);
    return this.#call(role, "read", () => this.#api.readNamespacedDeploymentScale({ name, namespace: this.namespace }));
  }

  /** One API call with a deadline, its failure turned into an error that says what to do. */
  async #call<T>(role: WorkerRole, verb: "read" | "patch", request: () => Promise<T>): Promise<T> {
    const name = this.#deployment(role);
    const where = `Deployment "${name}" (deployments.${role}) in namespace "${this.namespace}"`;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ArmatureError(
              "WORKER_UNAVAILABLE",
              `the Kubernetes API at ${this.#server} did not answer in ${this.#o.requestTimeoutMs} ms`,
              {
                retryable: true,
              },
            ),
          ),
        this.#o.requestTimeoutMs,
      );
    });
    try {
      return await Promise.race([request(), deadline]);
    } catch (error) {
      throw explain(error, verb, where, this.#server);
    } finally {
      clearTimeout(timer);
    }
  }
}

function defaultKubeConfig(config: KubeConfig): KubeConfig {
  config.loadFromDefault();
  return config;
}

/** Request options that send a patch as `application/merge-patch+json` (the client's default is a JSON patch). */
async function mergePatchOptions(): Promise<RequestOptions> {
  const { PatchStrategy, setHeaderOptions } = await import("@kubernetes/client-node");
  return setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
}

/** Maps an API failure to `CONFIG_INVALID` (fix the names or the RBAC) or a retryable `WORKER_UNAVAILABLE`. */
function explain(error: unknown, verb: string, where: string, server: string): unknown {
  if (error instanceof ArmatureError) return error;
  const status = typeof (error as { code?: unknown })?.code === "number" ? (error as { code: number }).code : undefined;
  if (status === undefined) {
    return new ArmatureError("WORKER_UNAVAILABLE", `cannot reach the Kubernetes API at ${server} to ${verb} the ${where}`, {
      retryable: true,
      cause: error,
    });
  }
  const detail = statusMessage((error as { body?: unknown }).body) ?? `HTTP ${status}`;
  if (status === 404) return new ArmatureError("CONFIG_INVALID", `no ${where}: ${detail}; check the name and namespace`);
  if (status === 401 || status === 403) {
    return new ArmatureError(
      "CONFIG_INVALID",
      `not allowed to ${verb} the ${where}: ${detail}; grant get and patch on deployments/scale and get on deployments (RBAC)`,
      { cause: error },
    );
  }
  if (status === 409 || status === 429 || status >= 500) {
    return new ArmatureError("WORKER_UNAVAILABLE", `the Kubernetes API could not ${verb} the ${where}: ${detail}`, {
      retryable: true,
      cause: error,
    });
  }
  return new ArmatureError("CONFIG_INVALID", `the Kubernetes API refused to ${verb} the ${where}: ${detail}`, { cause: error });
}

/** The `message` of a `Status` body, which the client hands over as text or parsed. */
function statusMessage(body: unknown): string | undefined {
  let value = body;
  if (typeof body === "string") {
    try {
      value = JSON.parse(body);
    } catch {
      return body.length > 0 ? body.slice(0, 200) : undefined;
    }
  }
  const message = (value as { message?: unknown } | null)?.message;
  return typeof message === "string" ? message : undefined;
}
