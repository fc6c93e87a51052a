/**
 * Splits a server-sent event stream, fed in arbitrary pieces, into the `data` of each event (the
 * lines after `data:`, joined by newlines, as the SSE specification has it). Comments, `event:`,
 * `id:` and `retry:` lines are skipped; CRLF and LF line ends are both accepted.
 */
export class SseLineReader {
  #buffer = "";
  #data: string[] = [];

  push(piece: string): string[] {
    const text = this.#buffer + piece;
    const events: string[] = [];
    let start = 0;
    let newline = text.indexOf("\n", start);
    while (newline >= 0) {
      const end = newline > start && text.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      if (end === start) {
        if (this.#data.length > 0) events.push(this.#data.join("\n"));
        this.#data = [];
      } else if (text.startsWith("data:", start)) {
        this.#data.push(text.slice(start + (text.charCodeAt(start + 5) === 32 ? 6 : 5), end));
      }
      start = newline + 1;
      newline = text.indexOf("\n", start);
    }
    this.#buffer = text.slice(start);
    return events;
  }
}
