import type { IncomingHttpHeaders } from "node:http";
import { ArmatureError, PRIORITY_LIMIT } from "../protocol/index.js";
import type { RequestGrant } from "./access/index.js";

/** The header that carries a request's priority on routes whose body has no `priority` field. */
export const PRIORITY_HEADER = "x-armature-priority";
/** The header that carries how long the client will wait for the whole response, in ms from arrival. */
export const DEADLINE_HEADER = "x-armature-deadline-ms";
/** The longest deadline a header may set: a day. */
const MAX_DEADLINE_MS = 86_400_000;

/**
 * The request's time budget in ms from arrival: the `x-armature-deadline-ms` header or the server's
 * `--request-timeout`, whichever is sooner; undefined when neither is set. Throws `REQUEST_INVALID`
 * naming the header when it is not a whole number of ms from 1 to a day.
 */
export function requestBudgetMs(headers: IncomingHttpHeaders, requestTimeoutMs: number | undefined): number | undefined {
  const raw = headers[DEADLINE_HEADER];
  if (raw === undefined) return requestTimeoutMs;
  const asked = wholeNumber(raw, DEADLINE_HEADER, 1, MAX_DEADLINE_MS, "milliseconds the client will wait for the response");
  return requestTimeoutMs === undefined ? asked : Math.min(asked, requestTimeoutMs);
}

/**
 * The priority the request runs at (lower runs earlier): its body's `priority` or the
 * `x-armature-priority` header (both: they must agree), else the API key's default; undefined
 * means 0. Throws `REQUEST_INVALID` naming the field or header that is malformed, in conflict, or
 * more urgent than the key's ceiling.
 */
export function requestPriority(
  headers: IncomingHttpHeaders,
  bodyPriority: number | undefined,
  grant: RequestGrant | undefined,
): number | undefined {
  const raw = headers[PRIORITY_HEADER];
  const fromHeader =
    raw === undefined ? undefined : wholeNumber(raw, PRIORITY_HEADER, -PRIORITY_LIMIT, PRIORITY_LIMIT, "an integer priority");
  if (fromHeader !== undefined && bodyPriority !== undefined && fromHeader !== bodyPriority) {
    throw new ArmatureError(
      "REQUEST_INVALID",
      `'priority' is ${bodyPriority} but the ${PRIORITY_HEADER} header says ${fromHeader}; send one`,
      { param: "priority" },
    );
  }
  const asked = bodyPriority ?? fromHeader;
  const param = bodyPriority !== undefined ? "priority" : PRIORITY_HEADER;
  return grant ? grant.priorityOf(asked, param) : asked;
}

function wholeNumber(raw: string | string[], header: string, min: number, max: number, what: string): number {
  const text = Array.isArray(raw) ? undefined : raw.trim();
  const value = text !== undefined && /^-?\d{1,16}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ArmatureError("REQUEST_INVALID", `the ${header} header must be ${what}, from ${min} to ${max}, sent once`, {
      param: header,
    });
  }
  return value;
}
