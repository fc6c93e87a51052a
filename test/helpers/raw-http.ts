import { connect } from "node:net";

/** What a server answered to bytes written on a raw socket. */
export type RawOutcome =
  | { readonly kind: "response"; readonly status: number; readonly headers: string; readonly body: string }
  /** The server closed (or reset) the connection without a full response. */
  | { readonly kind: "closed"; readonly partial: string }
  /** Nothing complete arrived in time. */
  | { readonly kind: "timeout"; readonly partial: string };

export interface RawRequestOptions {
  readonly timeoutMs: number;
  /** Half-close after writing (a truncated request the client gives up on). */
  readonly endAfterWrite?: boolean;
  /** Pause between the pieces, to play a slow client. */
  readonly pieceDelayMs?: number;
}

/**
 * Writes `pieces` to `host:port` as they are (no HTTP client in between, so malformed framing
 * reaches the server as sent) and reads one response. A 200 resolves once its head arrives (a
 * stream is not read to its end); any other status once its `content-length` body has arrived
 * or the server closes.
 */
export function rawRequest(url: string, pieces: readonly (Buffer | string)[], options: RawRequestOptions): Promise<RawOutcome> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (outcome: RawOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => finish({ kind: "timeout", partial: received.toString("latin1").slice(0, 300) }),
      options.timeoutMs,
    );
    const parsed = (): RawOutcome | undefined => {
      const text = received.toString("latin1");
      const headEnd = text.indexOf("\r\n\r\n");
      if (headEnd < 0) return undefined;
      const head = text.slice(0, headEnd);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? Number.NaN);
      const bodyBytes = received.subarray(headEnd + 4);
      const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
      if (status === 200 || (length !== undefined && bodyBytes.length >= Number(length))) {
        return { kind: "response", status, headers: head, body: bodyBytes.toString("utf8") };
      }
      return undefined;
    };
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const outcome = parsed();
      if (outcome) finish(outcome);
    });
    const onGone = (): void => {
      const text = received.toString("latin1");
      const headEnd = text.indexOf("\r\n\r\n");
      if (headEnd >= 0) {
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? Number.NaN);
        finish({
          kind: "response",
          status,
          headers: text.slice(0, headEnd),
          body: received.subarray(headEnd + 4).toString("utf8"),
        });
      } else {
        finish({ kind: "closed", partial: text.slice(0, 300) });
      }
    };
    socket.on("end", onGone);
    socket.on("close", onGone);
    socket.on("error", () => {});
    socket.once("connect", async () => {
      for (const piece of pieces) {
        if (settled || socket.destroyed) return;
        socket.write(piece);
        if (options.pieceDelayMs) await new Promise((r) => setTimeout(r, options.pieceDelayMs));
      }
      if (options.endAfterWrite && !socket.destroyed) socket.end();
    });
  });
}

/** An HTTP/1.1 request as bytes: `Connection: close`, `Content-Length` of the body unless given. */
export function httpRequest(
  method: string,
  path: string,
  body: Buffer | string | undefined,
  headers: Record<string, string> = {},
): Buffer {
  const bytes = body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(body);
  const all: Record<string, string> = {
    host: "localhost",
    connection: "close",
    ...(body !== undefined ? { "content-type": "application/json", "content-length": String(bytes.length) } : {}),
    ...headers,
  };
  const head = `${method} ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), bytes]);
}
