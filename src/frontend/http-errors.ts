import { type ErrorCode, isArmatureError } from "../protocol/index.js";

/** OpenAI's error body: all four keys present, `null` when unknown. */
export interface OpenAiErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: string | null;
  };
}

export interface HttpError {
  readonly status: number;
  readonly body: OpenAiErrorBody;
  /** Label for the requests_total metric (Dynamo's error_type values). */
  readonly errorType: "validation" | "not_found" | "overload" | "cancelled" | "internal" | "not_implemented" | "timeout";
}

const mapping: Record<ErrorCode, { status: number; type: string; code: string | null; errorType: HttpError["errorType"] }> = {
  REQUEST_INVALID: { status: 400, type: "invalid_request_error", code: null, errorType: "validation" },
  PROMPT_TOO_LONG: { status: 400, type: "invalid_request_error", code: "context_length_exceeded", errorType: "validation" },
  NOT_SUPPORTED: { status: 400, type: "invalid_request_error", code: "unsupported_parameter", errorType: "not_implemented" },
  MODEL_NOT_FOUND: { status: 404, type: "invalid_request_error", code: "model_not_found", errorType: "not_found" },
  RESOURCE_NOT_FOUND: { status: 404, type: "invalid_request_error", code: null, errorType: "not_found" },
  ROUTER_WORKER_NOT_FOUND: { status: 400, type: "invalid_request_error", code: "worker_not_found", errorType: "validation" },
  ROUTER_OVERLOADED: { status: 503, type: "service_unavailable", code: "overloaded", errorType: "overload" },
  ROUTER_DEADLINE_UNREACHABLE: {
    status: 503,
    type: "service_unavailable",
    code: "deadline_unreachable",
    errorType: "overload",
  },
  ROUTER_NO_WORKER: { status: 503, type: "service_unavailable", code: "no_worker", errorType: "overload" },
  WORKER_UNAVAILABLE: { status: 503, type: "service_unavailable", code: "worker_unavailable", errorType: "overload" },
  WORKER_DRAINING: { status: 503, type: "service_unavailable", code: "worker_draining", errorType: "overload" },
  ENGINE_CLOSED: { status: 503, type: "service_unavailable", code: "engine_closed", errorType: "overload" },
  BODY_TOO_LARGE: { status: 413, type: "invalid_request_error", code: "request_too_large", errorType: "validation" },
  REQUEST_TOO_LARGE: { status: 413, type: "invalid_request_error", code: "request_too_large", errorType: "validation" },
  REQUEST_TIMEOUT: { status: 504, type: "timeout", code: "request_timeout", errorType: "timeout" },
  REQUEST_CANCELLED: { status: 499, type: "cancelled", code: "cancelled", errorType: "cancelled" },
  ENGINE_FAILED: { status: 500, type: "internal_error", code: "engine_failed", errorType: "internal" },
  LISTEN_FAILED: { status: 500, type: "internal_error", code: "listen_failed", errorType: "internal" },
  CONFIG_INVALID: { status: 500, type: "internal_error", code: "config_invalid", errorType: "internal" },
  MODEL_LOAD_FAILED: { status: 500, type: "internal_error", code: "model_load_failed", errorType: "internal" },
  TRANSFER_FAILED: { status: 500, type: "internal_error", code: "transfer_failed", errorType: "internal" },
  TRANSFER_CORRUPTED: { status: 500, type: "internal_error", code: "transfer_corrupted", errorType: "internal" },
};

/** The one place where domain errors become HTTP statuses and OpenAI error bodies. */
export function toHttpError(error: unknown): HttpError {
  if (!isArmatureError(error)) {
    return {
      status: 500,
      errorType: "internal",
      body: {
        error: { message: "internal error; the server log has the details", type: "internal_error", param: null, code: null },
      },
    };
  }
  const m = mapping[error.code];
  return {
    status: m.status,
    errorType: m.errorType,
    body: { error: { message: error.message, type: m.type, param: error.param ?? null, code: m.code } },
  };
}
