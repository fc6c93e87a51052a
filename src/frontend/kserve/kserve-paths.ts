import { ArmatureError } from "../../protocol/index.js";

/** A KServe v2 REST path, resolved. */
export type KserveRoute =
  | { readonly kind: "server-live" | "server-ready" | "server-metadata" }
  | { readonly kind: "model-ready" | "model-metadata"; readonly model: string }
  | { readonly kind: "infer"; readonly model: string }
  | { readonly kind: "generate"; readonly model: string; readonly stream: boolean };

const MODELS = "/v2/models/";

const ACTIONS: Readonly<Record<string, { kind: "model-ready" | "infer" | "generate"; method: string; stream?: boolean }>> = {
  ready: { kind: "model-ready", method: "GET" },
  infer: { kind: "infer", method: "POST" },
  generate: { kind: "generate", method: "POST", stream: false },
  generate_stream: { kind: "generate", method: "POST", stream: true },
};

/**
 * Resolves `method path` to a route, or throws: {@link KservePathError} (404) for an unknown path
 * or (405) a wrong method, and `NOT_SUPPORTED` naming the version for a versioned
 * path. The model name is the path between `/v2/models/` and the action, percent-decoded, so a
 * name with `/` (`org/name`) works as is; a name that ends like an action is sent with `%2F`.
 */
export function parseKservePath(method: string, path: string): KserveRoute {
  const fixed: Record<string, KserveRoute["kind"]> = {
    "/v2": "server-metadata",
    "/v2/": "server-metadata",
    "/v2/health/live": "server-live",
    "/v2/health/ready": "server-ready",
  };
  const kind = fixed[path];
  if (kind !== undefined) {
    requireMethod(method, "GET", path);
    return { kind } as KserveRoute;
  }
  if (!path.startsWith(MODELS)) throw noRoute(path);
  let rest = path.slice(MODELS.length);
  let action: (typeof ACTIONS)[string] | undefined;
  const lastSlash = rest.lastIndexOf("/");
  const last = rest.slice(lastSlash + 1);
  if (lastSlash > 0 && Object.hasOwn(ACTIONS, last)) {
    action = ACTIONS[last];
    rest = rest.slice(0, lastSlash);
  }
  const versioned = /^(.+)\/versions\/([^/]+)$/.exec(rest);
  if (versioned) {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `model versions are not served: each model has one version, asked for without '/versions/${decode(versioned[2] as string)}' in the path`,
      { param: "version" },
    );
  }
  const model = decode(rest);
  if (model === "") throw noRoute(path);
  if (!action) {
    requireMethod(method, "GET", path);
    return { kind: "model-metadata", model };
  }
  requireMethod(method, action.method, path);
  if (action.kind === "generate") return { kind: "generate", model, stream: action.stream === true };
  return action.kind === "infer" ? { kind: "infer", model } : { kind: "model-ready", model };
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ArmatureError("REQUEST_INVALID", "the model name in the path is not valid percent-encoding", { param: "model" });
  }
}

/** A path that names no KServe route (404) or a route asked with the wrong method (405). */
export class KservePathError extends Error {
  readonly status: 404 | 405;

  constructor(status: 404 | 405, message: string) {
    super(message);
    this.name = "KservePathError";
    this.status = status;
  }
}

function requireMethod(method: string, expected: string, path: string): void {
  if (method !== expected) throw new KservePathError(405, `method ${method} is not allowed on ${path}; use ${expected}`);
}

function noRoute(path: string): KservePathError {
  return new KservePathError(404, `no route ${path}`);
}
