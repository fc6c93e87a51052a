/** Stable, namespaced error codes. Callers match on these, never on message text. */
export type ErrorCode =
  | "REQUEST_INVALID"
  | "MODEL_NOT_FOUND"
  /** A stored object (a file, a batch) that does not exist, or not for this API key. */
  | "RESOURCE_NOT_FOUND"
  | "PROMPT_TOO_LONG"
  | "ROUTER_NO_WORKER"
  | "ROUTER_WORKER_NOT_FOUND"
  | "ROUTER_OVERLOADED"
  /** Every worker is busy and the request's deadline would pass before it could run. */
  | "ROUTER_DEADLINE_UNREACHABLE"
  | "WORKER_UNAVAILABLE"
  | "WORKER_DRAINING"
  | "ENGINE_FAILED"
  | "ENGINE_CLOSED"
  | "REQUEST_CANCELLED"
  | "NOT_SUPPORTED"
  | "CONFIG_INVALID"
  | "LISTEN_FAILED"
  | "BODY_TOO_LARGE"
  /** The encoded request is larger than the bus takes in one message (nats-server's max_payload). */
  | "REQUEST_TOO_LARGE"
  | "REQUEST_TIMEOUT"
  | "MODEL_LOAD_FAILED"
  | "TRANSFER_FAILED"
  | "TRANSFER_CORRUPTED";

export interface ArmatureErrorOptions {
  readonly cause?: unknown;
  /** Whether retrying the same operation may succeed. */
  readonly retryable?: boolean;
  /** The request field at fault, when there is one (OpenAI's `param`). */
  readonly param?: string | undefined;
}

/** The one error class of armature: a code, a message that says what to do, and a cause. */
export class ArmatureError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly param: string | undefined;

  constructor(code: ErrorCode, message: string, options: ArmatureErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "ArmatureError";
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.param = options.param;
  }
}

export function isArmatureError(value: unknown): value is ArmatureError {
  return value instanceof ArmatureError;
}
