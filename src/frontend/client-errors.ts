import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { ArmatureError } from "../protocol/index.js";
import { toHttpError } from "./http-errors.js";

/** Statuses Node's own answer uses for parser errors; everything else is a 400. */
const statusOf = (code: string | undefined): number =>
  code === "HPE_HEADER_OVERFLOW"
    ? 431
    : code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? 408
      : code === "HPE_CHUNK_EXTENSIONS_OVERFLOW"
        ? 413
        : 400;

const messageOf = (status: number, code: string | undefined): string =>
  status === 431
    ? "the request headers are larger than this server accepts (16 KiB by default; node's --max-http-header-size raises it)"
    : status === 408
      ? "the request did not arrive in time; send the whole request without pauses"
      : `the request is not valid HTTP/1.1 (${code ?? "parse error"}); check its Content-Length, Transfer-Encoding and header lines`;

/**
 * The HTTP server's `clientError` listener: a request that Node's parser refuses (broken framing, a
 * malformed Content-Length, headers over the size limit) gets the same OpenAI error body as every
 * other refusal, where Node's default answer is a bare status line that OpenAI clients cannot read,
 * and the connection is closed. A connection already answering a request, or already gone, is
 * only closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const answering = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (error.code === "ECONNRESET" || !socket.writable || answering) {
    socket.destroy();
    return;
  }
  const status = statusOf(error.code);
  const body = JSON.stringify(toHttpError(new ArmatureError("REQUEST_INVALID", messageOf(status, error.code))).body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
