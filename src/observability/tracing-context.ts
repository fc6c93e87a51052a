import type { IncomingHttpHeaders } from "node:http";
import type { TraceContext } from "./tracing.js";

/** A valid `traceparent`'s parts (W3C Trace Context, level 1). */
export interface ParsedTraceparent {
  readonly version: string;
  readonly traceId: string;
  readonly parentId: string;
  readonly flags: string;
}

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const LATER_VERSION = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_PARENT_ID = "0".repeat(16);
/** Longest `tracestate` passed on: the size the W3C spec asks every vendor to propagate. */
const MAX_TRACESTATE_LENGTH = 512;

/**
 * A `traceparent` value's parts, or undefined when it is not one: not lowercase hex in the
 * `version-traceid-parentid-flags` form, version `ff`, an all-zero trace or parent id, or a version
 * 00 value with anything after the flags. A later version's value is read by its first four parts,
 * as the spec asks.
 */
export function parseTraceparent(value: string): ParsedTraceparent | undefined {
  const match = value.startsWith("00-") ? VERSION_00.exec(value) : LATER_VERSION.exec(value);
  if (!match) return undefined;
  const parts = value.startsWith("00-") ? ["00", match[1], match[2], match[3]] : [match[1], match[2], match[3], match[4]];
  const [version, traceId, parentId, flags] = parts;
  if (!version || version === "ff" || !traceId || !parentId || !flags) return undefined;
  if (traceId === ZERO_TRACE_ID || parentId === ZERO_PARENT_ID) return undefined;
  return { version, traceId, parentId, flags };
}

/** A version 00 `traceparent`. */
export function formatTraceparent(traceId: string, parentId: string, flags: string): string {
  return `00-${traceId}-${parentId}-${flags}`;
}

/**
 * The trace context a client sent in `traceparent` and `tracestate`, or undefined when it sent
 * none or a malformed `traceparent` (then `tracestate` is ignored too, as the spec says). Several
 * `tracestate` headers are joined; one longer than 512 characters is dropped.
 */
export function traceContextFromHeaders(headers: IncomingHttpHeaders): TraceContext | undefined {
  const traceparent = headers.traceparent;
  if (typeof traceparent !== "string" || !parseTraceparent(traceparent.trim())) return undefined;
  const raw = headers.tracestate;
  const tracestate = (Array.isArray(raw) ? raw.join(",") : raw)?.trim();
  const keep = tracestate !== undefined && tracestate !== "" && tracestate.length <= MAX_TRACESTATE_LENGTH;
  return keep ? { traceparent: traceparent.trim(), tracestate } : { traceparent: traceparent.trim() };
}
