import type { IncomingMessage, ServerResponse } from "node:http";
import type { MetricMeter } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import { type Clock, RealClock } from "../../runtime/index.js";
import type { OpenAiErrorBody } from "../http-errors.js";
import { sendJson } from "../http-io.js";
import { AccessMetrics, type RejectReason } from "./access-metrics.js";
import type { ApiKeySpec } from "./api-keys-file.js";
import { type ApiKeyEntry, KeyStore } from "./key-store.js";
import { isQuotaDenial, QuotaBook, type QuotaDenial, type QuotaLease } from "./rate-limits.js";

export interface AccessControlOptions {
  /** The accepted keys; at least one (without keys there is no access control, and no instance). */
  readonly keys: readonly ApiKeySpec[];
  /** Ask for a key on `GET /metrics` too. Default false: Prometheus scrapes without one. */
  readonly metricsRequireKey?: boolean;
  readonly meter: MetricMeter;
  /** Default: the real clock. */
  readonly clock?: Pick<Clock, "now">;
}

/** A refusal, ready to send: 401 (no or wrong key) or 429 (over a limit). */
export interface AccessDenial {
  readonly status: 401 | 429;
  readonly reason: RejectReason;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: OpenAiErrorBody;
}

export type AccessDecision =
  /** The path needs no key. */
  | { readonly kind: "open" }
  | { readonly kind: "granted"; readonly grant: RequestGrant }
  | { readonly kind: "denied"; readonly denial: AccessDenial };

/** Paths served without a key: liveness and health probes come from orchestrators that hold none. */
const OPEN_PATHS = new Set(["/health", "/live", "/v2/health/live", "/v2/health/ready"]);
/** POSTs under /v1/ that generate nothing: they need a key where keys are set, and spend no quota. */
const QUOTA_FREE_PATHS = new Set(["/v1/messages/count_tokens", "/v1/load_lora_adapter", "/v1/unload_lora_adapter"]);

/**
 * The dashboard's page and its script, style and chart library: they hold no data (a browser's
 * navigation cannot send a bearer key); the page asks `GET /v1/fleet`, which needs one, with the
 * key the operator gives it.
 */
function isDashboardFile(path: string): boolean {
  return path === "/dashboard" || path.startsWith("/dashboard/");
}

/**
 * The key check of the HTTP API. Every path but `/health`, `/live`, the dashboard's files under
 * `/dashboard` (and `/metrics` unless `metricsRequireKey`) needs a key, sent as
 * `Authorization: Bearer KEY` or Anthropic's `x-api-key: KEY`. A `POST` under `/v1/` (a
 * generation) also spends the key's quota: one request and one concurrency slot up front, its
 * tokens when it ends (see {@link KeyQuota.admit}).
 *
 * 401 and 429 are answered here, not through `toHttpError`: they carry headers (`WWW-Authenticate`,
 * `Retry-After`) and a 429's `type` names the limit, which one code per error cannot say. A model
 * the key may not use is `MODEL_NOT_FOUND`, the same 404 as a model nobody serves, as OpenAI does.
 */
export class AccessControl {
  readonly #keys: KeyStore;
  readonly #quotas: QuotaBook;
  readonly #metrics: AccessMetrics;
  readonly #metricsRequireKey: boolean;

  constructor(options: AccessControlOptions) {
    if (options.keys.length === 0) {
      throw new ArmatureError("CONFIG_INVALID", "access control needs at least one key (--api-key, --api-keys-file)");
    }
    this.#keys = new KeyStore(options.keys);
    this.#quotas = new QuotaBook(this.#keys.entries, options.clock ?? new RealClock());
    this.#metrics = new AccessMetrics(options.meter);
    this.#metricsRequireKey = options.metricsRequireKey ?? false;
    this.#metrics.keysLoaded.set({}, this.#keys.size);
  }

  /** Swaps the key list (a reload). In-flight requests finish under the entry they were admitted with. */
  replaceKeys(keys: readonly ApiKeySpec[]): void {
    if (keys.length === 0) throw new ArmatureError("CONFIG_INVALID", "a key list with no keys would refuse every request");
    this.#keys.replace(keys);
    this.#quotas.sync(this.#keys.entries);
    this.#metrics.keysLoaded.set({}, this.#keys.size);
  }

  /** Counts a reload attempt of the keys file. */
  countReload(result: "success" | "failure"): void {
    this.#metrics.reloads.inc({ result });
  }

  /**
   * Decides whether `req` may go on. A grant is tied to `res`: its concurrency slot is freed and
   * its status counted when the response ends or the client goes away.
   */
  check(req: IncomingMessage, res: ServerResponse, path: string): AccessDecision {
    const open = OPEN_PATHS.has(path) || isDashboardFile(path) || (path === "/metrics" && !this.#metricsRequireKey);
    if (open) return { kind: "open" };
    // A generation (a POST under /v1/, or KServe's /v2/models/…/infer and generate) spends quota;
    // counting a prompt's tokens generates nothing and spends none (as /tokenize).
    const generation =
      req.method === "POST" && (path.startsWith("/v1/") || path.startsWith("/v2/models/")) && !QUOTA_FREE_PATHS.has(path);
    const admission = this.admitKey(presentedKey(req), generation);
    if (admission.kind !== "granted") return admission;
    res.once("close", () => admission.end(res.headersSent ? String(res.statusCode) : "499"));
    return admission;
  }

  /**
   * The key check for a call that is not an HTTP request (KServe's gRPC API): `presented` is the
   * key sent, undefined when none; `generation` spends the key's quota. A grant's `end` must be
   * called once when the call ends, with its status as HTTP would give it (`200`, `400`, `499`…).
   */
  admitKey(
    presented: string | undefined,
    generation: boolean,
  ): Exclude<AccessDecision, { kind: "granted" | "open" }> | { kind: "granted"; grant: RequestGrant; end(status: string): void } {
    const entry = presented === undefined ? undefined : this.#keys.find(presented);
    if (!entry) return this.#deny(unauthorized(presented === undefined ? "missing_key" : "invalid_key"), "");
    let lease: QuotaLease | undefined;
    if (generation) {
      const admitted = this.#quotas.get(entry.name)?.admit();
      if (admitted && isQuotaDenial(admitted)) return this.#deny(rateLimited(entry.name, admitted), entry.name);
      lease = admitted;
    }
    return this.#grant(entry, lease);
  }

  /**
   * The grant of work the key named `name` queued earlier (a batch's requests): its model list,
   * default priority and ceiling apply and its tokens are counted, but no request quota is spent
   * (the batch was admitted once). Tied to `res` as `check`'s grants are. Denied when the key is gone.
   */
  grantByName(name: string, res: ServerResponse): AccessDecision {
    const entry = this.#keys.entries.find((e) => e.name === name);
    if (!entry) return this.#deny(unauthorized("invalid_key"), "");
    const admission = this.#grant(entry, undefined);
    res.once("close", () => admission.end(res.headersSent ? String(res.statusCode) : "499"));
    return admission;
  }

  #grant(entry: ApiKeyEntry, lease: QuotaLease | undefined): { kind: "granted"; grant: RequestGrant; end(status: string): void } {
    const grant = new RequestGrant(entry, lease, this.#metrics);
    this.#metrics.inflight.inc({ key_name: entry.name });
    let ended = false;
    const end = (status: string): void => {
      if (ended) return;
      ended = true;
      grant.release();
      this.#metrics.inflight.dec({ key_name: entry.name });
      this.#metrics.requests.inc({ key_name: entry.name, status });
    };
    return { kind: "granted", grant, end };
  }

  #deny(denial: AccessDenial, keyName: string): { kind: "denied"; denial: AccessDenial } {
    this.#metrics.rejected.inc({ key_name: keyName, reason: denial.reason });
    return { kind: "denied", denial };
  }
}

/** What one admitted request may do and what it used; handed to the route that serves it. */
export class RequestGrant {
  readonly #entry: ApiKeyEntry;
  readonly #lease: QuotaLease | undefined;
  readonly #metrics: AccessMetrics;

  constructor(entry: ApiKeyEntry, lease: QuotaLease | undefined, metrics: AccessMetrics) {
    this.#entry = entry;
    this.#lease = lease;
    this.#metrics = metrics;
  }

  /** The key's name, for logs and metrics. */
  get keyName(): string {
    return this.#entry.name;
  }

  allowsModel(model: string): boolean {
    return this.#entry.models === undefined || this.#entry.models.has(model);
  }

  /** Throws `MODEL_NOT_FOUND` (404, worded as for a model nobody serves) when the key may not use `model`. */
  checkModel(model: string): void {
    if (this.allowsModel(model)) return;
    this.#metrics.rejected.inc({ key_name: this.#entry.name, reason: "model_not_allowed" });
    throw new ArmatureError("MODEL_NOT_FOUND", `The model \`${model}\` does not exist or you do not have access to it.`, {
      param: "model",
    });
  }

  /**
   * The priority a request of this key runs at: the one it asked for, else the key's
   * `default_priority`. Throws `REQUEST_INVALID` naming `param` when it asks for a more urgent one
   * (lower number) than the key's `priority_ceiling`.
   */
  priorityOf(asked: number | undefined, param: string): number | undefined {
    const ceiling = this.#entry.priorityCeiling;
    if (asked !== undefined && ceiling !== undefined && asked < ceiling) {
      this.#metrics.rejected.inc({ key_name: this.#entry.name, reason: "priority_above_ceiling" });
      throw new ArmatureError(
        "REQUEST_INVALID",
        `priority ${asked} is more urgent than this API key may ask for (its priority_ceiling is ${ceiling}; lower runs earlier)`,
        { param },
      );
    }
    return asked ?? this.#entry.defaultPriority;
  }

  /** Charges a finished request's tokens to the key (metrics and the token bucket). */
  recordUsage(promptTokens: number, completionTokens: number): void {
    const key_name = this.#entry.name;
    if (promptTokens > 0) this.#metrics.tokens.inc({ key_name, kind: "prompt" }, promptTokens);
    if (completionTokens > 0) this.#metrics.tokens.inc({ key_name, kind: "completion" }, completionTokens);
    this.#lease?.debit(promptTokens + completionTokens);
  }

  /** Frees the concurrency slot (also done when the response closes). Idempotent. */
  release(): void {
    this.#lease?.release();
  }
}

/** Sends a refusal with its headers; the body is not read. */
export function sendAccessDenial(
  req: IncomingMessage,
  res: ServerResponse,
  denial: AccessDenial,
  headers: Record<string, string>,
): void {
  req.resume();
  sendJson(res, denial.status, denial.body, { ...headers, ...denial.headers });
}

/** `Authorization: Bearer KEY` first, else `x-api-key: KEY`; undefined when neither is there. */
export function presentedKey(req: IncomingMessage): string | undefined {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    // A malformed Authorization header is a wrong key, not a missing one.
    return match?.[1] ?? authorization;
  }
  const header = req.headers["x-api-key"];
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined || value === "" ? undefined : value;
}

function unauthorized(reason: "missing_key" | "invalid_key"): AccessDenial {
  const missing = reason === "missing_key";
  return {
    status: 401,
    reason,
    headers: { "www-authenticate": missing ? 'Bearer realm="armature"' : 'Bearer realm="armature", error="invalid_token"' },
    body: {
      error: {
        message: missing
          ? "You didn't provide an API key. Send it as 'Authorization: Bearer KEY' (or 'x-api-key: KEY'); the server's operator issues keys."
          : "Incorrect API key provided. Check the key you send in 'Authorization: Bearer KEY' (or 'x-api-key'); the server's operator issues keys.",
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      },
    },
  };
}

const LIMIT_WORDS: Record<QuotaDenial["limit"], { type: "requests" | "tokens"; words: string }> = {
  requests_per_minute: { type: "requests", words: "requests per min (RPM)" },
  tokens_per_minute: { type: "tokens", words: "tokens per min (TPM)" },
  max_concurrent: { type: "requests", words: "concurrent requests" },
};

function rateLimited(keyName: string, denial: QuotaDenial): AccessDenial {
  const { type, words } = LIMIT_WORDS[denial.limit];
  return {
    status: 429,
    reason: denial.limit,
    headers: { "retry-after": String(denial.retryAfterSeconds) },
    body: {
      error: {
        message: `Rate limit reached for API key '${keyName}' on ${words}: Limit ${denial.allowed}. Please try again in ${denial.retryAfterSeconds}s.`,
        type,
        param: null,
        code: "rate_limit_exceeded",
      },
    },
  };
}
