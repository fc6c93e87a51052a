import assert from "node:assert/strict";
import { test } from "node:test";
import { noTracing } from "./no-tracing.js";
import { parseTraceparent, traceContextFromHeaders } from "./tracing-context.js";
import { RequestTrace } from "./tracing-request.js";

// The W3C Trace Context recommendation's example header (section 3.2.2.5 / examples).
const EXAMPLE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

test("a version 00 traceparent is read into its parts", () => {
  assert.deepEqual(parseTraceparent(EXAMPLE), {
    version: "00",
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    parentId: "00f067aa0ba902b7",
    flags: "01",
  });
});

test("malformed traceparents are refused, as the W3C spec lists them", () => {
  const refused = [
    "", // empty
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", // no flags
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // uppercase hex
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // all-zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // all-zero parent id
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff is invalid
    `${EXAMPLE}-extra`, // version 00 has exactly four parts
    "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", // trace id one digit short
    "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", // wrong separators
    "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version not hex
  ];
  for (const value of refused) assert.equal(parseTraceparent(value), undefined, value);
});

test("a later version is read by its first four parts, whatever follows a dash", () => {
  const later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-brings";
  assert.equal(parseTraceparent(later)?.traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
  assert.equal(parseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"), undefined);
});

test("headers: traceparent with its tracestate; tracestate ignored when traceparent is malformed", () => {
  assert.deepEqual(traceContextFromHeaders({ traceparent: EXAMPLE, tracestate: "congo=t61rcWkgMzE" }), {
    traceparent: EXAMPLE,
    tracestate: "congo=t61rcWkgMzE",
  });
  assert.deepEqual(
    traceContextFromHeaders({ traceparent: EXAMPLE, tracestate: ["rojo=00f067aa0ba902b7", "congo=t61rcWkgMzE"] }),
    {
      traceparent: EXAMPLE,
      tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    },
  );
  assert.deepEqual(traceContextFromHeaders({ traceparent: EXAMPLE, tracestate: `a=${"x".repeat(600)}` }), {
    traceparent: EXAMPLE,
  });
  assert.equal(traceContextFromHeaders({ traceparent: "00-garbage", tracestate: "congo=t61rcWkgMzE" }), undefined);
  assert.equal(traceContextFromHeaders({}), undefined);
});

test("without export, a span continues its parent's trace with a new span id and the parent's flags", () => {
  const child = noTracing.startSpan("route", { parent: { traceparent: EXAMPLE, tracestate: "congo=t61rcWkgMzE" } });
  const parsed = parseTraceparent(child.context.traceparent);
  assert.equal(child.traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
  assert.equal(parsed?.traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
  assert.notEqual(parsed?.parentId, "00f067aa0ba902b7");
  assert.equal(parsed?.flags, "01");
  assert.equal(child.context.tracestate, "congo=t61rcWkgMzE");
  const unsampled = noTracing.startSpan("route", { parent: { traceparent: EXAMPLE.replace(/01$/, "00") } });
  assert.equal(parseTraceparent(unsampled.context.traceparent)?.flags, "00");
});

test("a request's trace id: the client's when its traceparent is valid, else a new one for each request", () => {
  assert.equal(new RequestTrace(noTracing, { traceparent: EXAMPLE }).traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
  const fresh = new RequestTrace(noTracing, undefined);
  const other = new RequestTrace(noTracing, { traceparent: "00-not-a-context" });
  assert.match(fresh.traceId, /^[0-9a-f]{32}$/);
  assert.match(other.traceId, /^[0-9a-f]{32}$/);
  assert.notEqual(fresh.traceId, other.traceId);
  // The context sent to workers carries the request's trace id.
  assert.equal(parseTraceparent(fresh.workerContext.traceparent)?.traceId, fresh.traceId);
  assert.equal(
    parseTraceparent(new RequestTrace(noTracing, { traceparent: EXAMPLE }).workerContext.traceparent)?.traceId,
    "4bf92f3577b34da6a3ce929d0e0e4736",
  );
});

test("--otlp-endpoint: a bare collector URL gets OTLP's /v1/traces, a URL with a path is used as it is", async () => {
  const { otlpTracesUrl } = await import("./tracing-otel.js");
  assert.equal(otlpTracesUrl("http://localhost:4318"), "http://localhost:4318/v1/traces");
  assert.equal(otlpTracesUrl("http://localhost:4318/"), "http://localhost:4318/v1/traces");
  assert.equal(otlpTracesUrl("https://tempo.example/otlp/v1/traces"), "https://tempo.example/otlp/v1/traces");
});
