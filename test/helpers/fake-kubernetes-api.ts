import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/** One request the fake API server received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly contentType: string | undefined;
  readonly authorization: string | undefined;
  readonly body: unknown;
}

interface FakeDeployment {
  replicas: number;
  ready: number;
  generation: number;
  resourceVersion: number;
  readonly uid: string;
  timer: NodeJS.Timeout | undefined;
}

export interface FakeKubernetesApiOptions {
  /** Deployments that exist, by namespace and name, with their replicas. */
  readonly deployments: readonly { namespace: string; name: string; replicas?: number }[];
  /** The bearer token it accepts; anything else is answered 401. */
  readonly token: string;
  /** How long a new pod takes to become ready. Default 50 ms. */
  readonly podStartMs?: number;
  /** `METHOD name` pairs answered 403, as RBAC would (e.g. `PATCH llama-decode`). */
  readonly forbidden?: readonly string[];
  /** Paths it never answers (a hung API server). */
  readonly hang?: readonly string[];
}

const SCALE_PATH = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/deployments\/([^/]+)\/scale$/;
const DEPLOYMENT_PATH = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/deployments\/([^/]+)$/;
const PATCH_TYPES = ["application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json"];

/**
 * A stand-in for the Kubernetes API server, on loopback, implementing only what the Kubernetes
 * connector uses, as the API reference documents it: `GET`/`PATCH` of a Deployment's scale
 * subresource (an `autoscaling/v1` Scale) and `GET` of the Deployment; failures as `Status`
 * objects (401, 403, 404, 415, 422). A controller stands in for the Deployment's: pods become
 * ready `podStartMs` after a scale-up; on a scale-down the removed pods stop counting at once.
 */
export class FakeKubernetesApi {
  readonly requests: RecordedRequest[] = [];
  readonly #server: Server;
  readonly #o: FakeKubernetesApiOptions;
  readonly #deployments = new Map<string, FakeDeployment>();

  private constructor(options: FakeKubernetesApiOptions) {
    this.#o = options;
    for (const d of options.deployments) {
      const replicas = d.replicas ?? 0;
      const deployment = { replicas, ready: replicas, generation: 1, resourceVersion: 1, uid: randomUUID(), timer: undefined };
      this.#deployments.set(`${d.namespace}/${d.name}`, deployment);
    }
    this.#server = createServer((req, res) => this.#handle(req, res));
  }

  static async start(options: FakeKubernetesApiOptions): Promise<FakeKubernetesApi> {
    const api = new FakeKubernetesApi(options);
    await new Promise<void>((resolve) => api.#server.listen(0, "127.0.0.1", resolve));
    return api;
  }

  get url(): string {
    const address = this.#server.address();
    return typeof address === "object" && address ? `http://127.0.0.1:${address.port}` : "";
  }

  async close(): Promise<void> {
    for (const d of this.#deployments.values()) clearTimeout(d.timer);
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const url = new URL(req.url ?? "/", "http://fake");
    const request: RecordedRequest = {
      method: req.method ?? "",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType: req.headers["content-type"],
      authorization: req.headers.authorization,
      body: text.length > 0 ? JSON.parse(text) : undefined,
    };
    this.requests.push(request);
    if (this.#o.hang?.includes(url.pathname)) return;
    if (request.authorization !== `Bearer ${this.#o.token}`) return status(res, 401, "Unauthorized", "Unauthorized");
    const scale = SCALE_PATH.exec(url.pathname);
    const whole = DEPLOYMENT_PATH.exec(url.pathname);
    const [namespace, name] = (scale ?? whole ?? []).slice(1) as [string, string];
    if (!namespace) return status(res, 404, "NotFound", "the server could not find the requested resource");
    if (this.#o.forbidden?.includes(`${request.method} ${name}`)) {
      const resource = scale ? "deployments/scale" : "deployments";
      const who = `User "system:serviceaccount:${namespace}:planner"`;
      return status(
        res,
        403,
        "Forbidden",
        `${resource}.apps "${name}" is forbidden: ${who} cannot ${request.method.toLowerCase()} resource "${resource}" in API group "apps" in the namespace "${namespace}"`,
      );
    }
    const deployment = this.#deployments.get(`${namespace}/${name}`);
    if (!deployment) return status(res, 404, "NotFound", `deployments.apps "${name}" not found`);
    if (whole && request.method === "GET") return json(res, 200, deploymentBody(namespace, name, deployment));
    if (scale && request.method === "GET") return json(res, 200, scaleBody(namespace, name, deployment));
    if (scale && request.method === "PATCH") return this.#patch(res, request, namespace, name, deployment);
    return status(res, 405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);
  }

  #patch(res: ServerResponse, request: RecordedRequest, namespace: string, name: string, d: FakeDeployment): void {
    const type = request.contentType?.split(";")[0]?.trim() ?? "";
    if (!PATCH_TYPES.includes(type)) {
      const accepted = PATCH_TYPES.join(", ");
      status(
        res,
        415,
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: ${accepted}`,
      );
      return;
    }
    const replicas = replicasFrom(type, request.body);
    if (replicas === undefined || !Number.isInteger(replicas) || replicas < 0) {
      const value = JSON.stringify(replicas);
      status(
        res,
        422,
        "Invalid",
        `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${value}: must be greater than or equal to 0`,
      );
      return;
    }
    if (replicas !== d.replicas) {
      d.replicas = replicas;
      d.generation++;
      d.resourceVersion++;
      d.ready = Math.min(d.ready, replicas);
      clearTimeout(d.timer);
      if (d.ready < replicas) {
        d.timer = setTimeout(() => {
          d.ready = d.replicas;
          d.resourceVersion++;
        }, this.#o.podStartMs ?? 50);
      }
    }
    json(res, 200, scaleBody(namespace, name, d));
  }
}

function replicasFrom(type: string, body: unknown): number | undefined {
  if (type === "application/json-patch+json") {
    const op = (body as { op?: string; path?: string; value?: unknown }[] | undefined)?.find((o) => o.path === "/spec/replicas");
    return typeof op?.value === "number" ? op.value : undefined;
  }
  const value = (body as { spec?: { replicas?: unknown } } | undefined)?.spec?.replicas;
  return typeof value === "number" ? value : undefined;
}

function metadata(namespace: string, name: string, d: FakeDeployment) {
  return { name, namespace, uid: d.uid, resourceVersion: String(d.resourceVersion), creationTimestamp: "2026-01-01T00:00:00Z" };
}

function scaleBody(namespace: string, name: string, d: FakeDeployment) {
  return {
    kind: "Scale",
    apiVersion: "autoscaling/v1",
    metadata: metadata(namespace, name, d),
    spec: { replicas: d.replicas },
    status: { replicas: d.replicas, selector: `app=${name}` },
  };
}

function deploymentBody(namespace: string, name: string, d: FakeDeployment) {
  return {
    kind: "Deployment",
    apiVersion: "apps/v1",
    metadata: { ...metadata(namespace, name, d), generation: d.generation },
    spec: { replicas: d.replicas, selector: { matchLabels: { app: name } } },
    status: {
      observedGeneration: d.generation,
      replicas: d.replicas,
      updatedReplicas: d.replicas,
      // A Deployment's status leaves out counts that are zero.
      ...(d.ready > 0 ? { readyReplicas: d.ready, availableReplicas: d.ready } : {}),
    },
  };
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** A `Status` object, as the API server answers a failed request. */
function status(res: ServerResponse, code: number, reason: string, message: string): void {
  json(res, code, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code });
}
