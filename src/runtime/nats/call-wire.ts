import { isArmatureError } from "../../protocol/index.js";

/** What the caller sends to start a call. */
export interface CallStart {
  readonly payload: unknown;
  /** Where the handler streams its responses. */
  readonly stream: string;
  /** Where the caller says "stop" (an empty message) or grants credit (`CreditGrant`). */
  readonly cancel: string;
  /** Items the handler may send before it waits for a grant. Absent: no limit. */
  readonly window?: number;
}

/** Largest flow-control window a caller may ask for. */
const MAX_WINDOW = 1 << 20;
/** One or more non-empty tokens, no whitespace, no wildcard: a subject a handler can publish to. */
const PUBLISHABLE_SUBJECT = /^[^\s.*>]+(\.[^\s.*>]+)*$/;
const MAX_SUBJECT_LENGTH = 1024;

const isPublishableSubject = (value: unknown): value is string =>
  typeof value === "string" && value.length <= MAX_SUBJECT_LENGTH && PUBLISHABLE_SUBJECT.test(value);

/**
 * The call start in a decoded message, or undefined when no handler could answer it: a stream or
 * cancel subject that is not a publishable subject (publishing to it would throw in the handler's
 * heartbeat timer), or a window that is not a positive integer (0 would park the handler at once).
 */
export function parseCallStart(value: unknown): CallStart | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const { payload, stream, cancel, window } = value as Record<string, unknown>;
  if (!isPublishableSubject(stream) || !isPublishableSubject(cancel)) return undefined;
  if (window === undefined) return { payload, stream, cancel };
  if (!Number.isSafeInteger(window) || (window as number) < 1 || (window as number) > MAX_WINDOW) return undefined;
  return { payload, stream, cancel, window: window as number };
}

/** The caller has consumed `n` more items: the handler may send that many more. */
export interface CreditGrant {
  readonly t: "credit";
  readonly n: number;
}

/** What flows back on the stream subject. */
export type StreamMessage =
  | { readonly t: "item"; readonly v: unknown }
  | {
      readonly t: "ping";
      /** Items produced plus progress the handler reported: unchanged between pings means no progress. */
      readonly p?: number;
      /** Set while the handler waits for the caller's credit: a pause the caller caused, not a stall. */
      readonly w?: "credit";
    }
  | { readonly t: "end" }
  | {
      readonly t: "error";
      readonly code: string;
      readonly message: string;
      readonly retryable: boolean;
      readonly param?: string;
    };

export function errorMessageOf(error: unknown): StreamMessage {
  if (isArmatureError(error)) {
    return {
      t: "error",
      code: error.code,
      message: error.message,
      retryable: error.retryable,
      ...(error.param ? { param: error.param } : {}),
    };
  }
  return { t: "error", code: "ENGINE_FAILED", message: String((error as Error)?.message ?? error), retryable: false };
}
