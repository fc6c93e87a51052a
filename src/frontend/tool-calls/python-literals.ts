/**
 * A reader of the Python call lists pythonic models write: `[f(a=1, b='x'), g()]`. Values are
 * Python literals (strings, numbers, True/False/None, lists, tuples, dicts), turned into JSON
 * values; anything else (a name, an expression, bytes) is a `SyntaxError`.
 */
export class PythonCallReader {
  readonly #text: string;
  #at = 0;

  constructor(text: string) {
    this.#text = text;
  }

  /** Whether only spaces are left. */
  get done(): boolean {
    this.#space();
    return this.#at >= this.#text.length;
  }

  /** Reads `name(key=value, …)`. */
  call(): { name: string; args: Record<string, unknown> } {
    const name = this.#identifier();
    this.#expect("(");
    const args: Record<string, unknown> = {};
    while (!this.#take(")")) {
      const key = this.#identifier();
      this.#expect("=");
      args[key] = this.value();
      if (!this.#take(",")) this.#expect(")", true);
    }
    return { name, args };
  }

  /** Skips to just after the `)` that closes the call begun at `from`, strings and brackets respected. */
  skipCallFrom(from: number): void {
    this.#at = from;
    let depth = 0;
    while (this.#at < this.#text.length) {
      const c = this.#text[this.#at++] as string;
      if (c === "'" || c === '"') this.#skipString(c);
      else if ("([{".includes(c)) depth++;
      else if (")]}".includes(c) && --depth === 0) return;
    }
  }

  /** Where the reader is in the text. */
  get position(): number {
    return this.#at;
  }

  /** Consumes `c` (after spaces) when it is next. */
  take(c: string): boolean {
    return this.#take(c);
  }

  /** Consumes `c` (after spaces); a `SyntaxError` when something else is next. */
  expect(c: string): void {
    this.#expect(c);
  }

  /** Reads one Python literal as a JSON value. */
  value(): unknown {
    this.#space();
    const c = this.#text[this.#at];
    if (c === "'" || c === '"') return this.#string(c);
    if (c === "[") return this.#sequence("]");
    if (c === "(") return this.#sequence(")");
    if (c === "{") return this.#dict();
    const number = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?/.exec(this.#text.slice(this.#at));
    if (number) {
      this.#at += number[0].length;
      const n = Number(number[0]);
      if (!Number.isFinite(n)) throw new SyntaxError(`${number[0]} is not a finite number`);
      return n;
    }
    const word = this.#identifier();
    if (word === "True") return true;
    if (word === "False") return false;
    if (word === "None") return null;
    throw new SyntaxError(`'${word}' is not a Python literal`);
  }

  #sequence(close: string): unknown[] {
    this.#at++;
    const items: unknown[] = [];
    while (!this.#take(close)) {
      items.push(this.value());
      if (!this.#take(",")) this.#expect(close, true);
    }
    return items;
  }

  #dict(): Record<string, unknown> {
    this.#at++;
    const out: Record<string, unknown> = {};
    while (!this.#take("}")) {
      const key = this.value();
      if (typeof key !== "string" && typeof key !== "number") throw new SyntaxError("dict keys must be strings or numbers");
      this.#expect(":");
      out[String(key)] = this.value();
      if (!this.#take(",")) this.#expect("}", true);
    }
    return out;
  }

  #string(quote: string): string {
    this.#at++;
    let out = "";
    for (;;) {
      const c = this.#text[this.#at++];
      if (c === undefined) throw new SyntaxError("unterminated string");
      if (c === quote) return out;
      if (c !== "\\") {
        out += c;
        continue;
      }
      const e = this.#text[this.#at++];
      const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0" };
      if (e !== undefined && simple[e] !== undefined) out += simple[e];
      else if (e === "u" || e === "x") {
        const width = e === "u" ? 4 : 2;
        out += String.fromCharCode(Number.parseInt(this.#text.slice(this.#at, this.#at + width), 16));
        this.#at += width;
      } else out += `\\${e ?? ""}`;
    }
  }

  #skipString(quote: string): void {
    while (this.#at < this.#text.length) {
      const c = this.#text[this.#at++];
      if (c === "\\") this.#at++;
      else if (c === quote) return;
    }
  }

  #identifier(): string {
    this.#space();
    const match = /^[A-Za-z_][\w.]*/.exec(this.#text.slice(this.#at));
    if (!match) throw new SyntaxError(`a name was expected at ${this.#at}`);
    this.#at += match[0].length;
    return match[0];
  }

  #space(): void {
    while (/\s/.test(this.#text[this.#at] ?? "")) this.#at++;
  }

  #take(c: string): boolean {
    this.#space();
    if (this.#text[this.#at] !== c) return false;
    this.#at++;
    return true;
  }

  #expect(c: string, keep = false): void {
    this.#space();
    if (this.#text[this.#at] !== c) throw new SyntaxError(`'${c}' was expected at ${this.#at}`);
    if (!keep) this.#at++;
  }
}
