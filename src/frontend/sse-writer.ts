import type { ServerResponse } from "node:http";

/** Writes a data-only SSE stream, honouring backpressure and stopping when the client leaves. */
export class SseWriter {
  readonly #res: ServerResponse;
  #corked = false;

  constructor(res: ServerResponse, headers: Record<string, string>) {
    this.#res = res;
    res.writeHead(200, {
      ...headers,
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    // No flushHeaders(): the first event is written right away and carries the headers with it.
  }

  get closed(): boolean {
    return this.#res.destroyed || this.#res.writableEnded;
  }

  /**
   * Sends one `data:` event. Returns a promise to wait on only while the socket's buffer is full
   * (most writes return nothing: a token's write costs no promise).
   */
  send(data: unknown): Promise<void> | undefined {
    return this.#write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  }

  /** Sends one named event (`event: <name>` then `data: <json>`), as Anthropic's and the Responses streams do. */
  sendEvent(name: string, data: unknown): Promise<void> | undefined {
    return this.#write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Ends the response without `[DONE]` (streams of named events end when their last event is sent). */
  end(): void {
    if (!this.closed) this.#res.end();
  }

  /** Sends `data: [DONE]` and ends the response. */
  async done(): Promise<void> {
    if (this.closed) return;
    this.#res.end("data: [DONE]\n\n");
  }

  /**
   * Holds the writes that follow until `done()` ends the response, so the events that end a stream
   * leave in one packet. Only those last few events may follow: they do not wait for the buffer.
   */
  cork(): void {
    this.#res.cork();
    this.#corked = true;
  }

  #write(text: string): Promise<void> | undefined {
    if (this.closed) return undefined;
    // A corked socket sends nothing, so it never drains: waiting here would wait for ever.
    if (!this.#res.write(text) && !this.#corked) return this.#drained();
    return undefined;
  }

  /** Resolves on `drain` or `close`, whichever comes first, and leaves no listener behind. */
  #drained(): Promise<void> {
    const res = this.#res;
    return new Promise<void>((resolve) => {
      const settle = (): void => {
        res.off("drain", settle);
        res.off("close", settle);
        resolve();
      };
      res.on("drain", settle);
      res.on("close", settle);
    });
  }
}
