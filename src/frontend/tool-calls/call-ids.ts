import { randomBytes } from "node:crypto";

/** A fresh tool call id, `call_` and 24 hex digits, as OpenAI's ids look. */
export function newToolCallId(): string {
  return `call_${randomBytes(12).toString("hex")}`;
}
