import type { IncomingMessage, ServerResponse } from "node:http";
import { ArmatureError } from "../protocol/index.js";

/**
 * Reads a body of at most `limitBytes`; a larger one is `BODY_TOO_LARGE` naming `limitFlag`, the
 * flag that sets the limit.
 */
export async function readBody(req: IncomingMessage, limitBytes: number, limitFlag = "--max-body-bytes"): Promise<Buffer> {
  const tooLarge = (): ArmatureError =>
    new ArmatureError(
      "BODY_TOO_LARGE",
      `the request body is larger than this server's limit of ${limitBytes} bytes (its operator sets it with ${limitFlag})`,
    );
  // A declared length over the limit is refused before a byte is read.
  if (Number(req.headers["content-length"] ?? 0) > limitBytes) throw tooLarge();
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Not `for await`: leaving it early destroys the request, and the client, still sending, would
    // get a reset instead of the 413 (see `lingerThenClose`).
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limitBytes) {
        req.off("data", onData);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

/** Reads and parses a JSON body of at most `limitBytes`. */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const text = (await readBody(req, limitBytes)).toString("utf8");
  if (text.trim() === "") throw new ArmatureError("REQUEST_INVALID", "request body is empty; send a JSON object");
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ArmatureError("REQUEST_INVALID", `request body is not valid JSON: ${(cause as Error).message}`, { cause });
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload),
  });
  res.end(payload);
}

/**
 * After an early answer (413), reads and drops what the client still sends, for at most `maxMs`,
 * then closes: closing at once would make the kernel reset the connection on the client's unread
 * bytes, and the client would see a reset instead of the answer.
 */
export function lingerThenClose(req: IncomingMessage, maxMs = 5000): void {
  const timer = setTimeout(() => req.socket?.destroy(), maxMs);
  timer.unref();
  req.once("end", () => clearTimeout(timer));
  req.once("close", () => clearTimeout(timer));
  req.resume();
}
