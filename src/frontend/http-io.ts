import type { IncomingMessage, ServerResponse } from "node:http";
import { ArmatureError } from "../protocol/index.js";

/** Reads and parses a JSON body of at most `limitBytes`. */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const tooLarge = (): ArmatureError =>
    new ArmatureError(
      "BODY_TOO_LARGE",
      `the request body is larger than this server's limit of ${limitBytes} bytes (its operator sets it with --max-body-bytes)`,
    );
  // A declared length over the limit is refused before a byte is read.
  if (Number(req.headers["content-length"] ?? 0) > limitBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limitBytes) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
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
