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
