import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

/** One span as an OTLP/HTTP JSON export carries it (ids in hex, times in ns as strings). */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
}

/** A sink for OTLP/HTTP trace exports (`POST /v1/traces`, JSON, optionally gzip), keeping every span. */
export interface OtlpReceiver {
  /** Base URL, e.g. `http://127.0.0.1:PORT`, for `--otlp-endpoint`. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Requests that were not a JSON trace export (their content type). */
  readonly refused: string[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: OtlpAttribute[];
  status?: { code?: number };
}
interface OtlpExport {
  resourceSpans: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

function otlpValue(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? "";
}

function attributesOf(list: readonly OtlpAttribute[] = []): Record<string, string | number | boolean> {
  return Object.fromEntries(list.map((a) => [a.key, otlpValue(a.value)]));
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  return req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const refused: string[] = [];
  const server = createServer((req, res) => {
    void body(req).then((bytes) => {
      const type = req.headers["content-type"] ?? "";
      if (req.method !== "POST" || req.url !== "/v1/traces" || !type.startsWith("application/json")) {
        refused.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(415).end();
        return;
      }
      const request = JSON.parse(bytes.toString("utf8")) as OtlpExport;
      for (const resourceSpans of request.resourceSpans) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? "",
              name: span.name,
              kind: span.kind,
              startNs: BigInt(span.startTimeUnixNano),
              endNs: BigInt(span.endTimeUnixNano),
              attributes: attributesOf(span.attributes),
              statusCode: span.status?.code ?? 0,
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
