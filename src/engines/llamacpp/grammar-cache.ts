import { createHash } from "node:crypto";
import type { Llama, LlamaGrammar } from "node-llama-cpp";
import { SchemaRefusal, schemaGbnf } from "../../grammar/index.js";
import { ArmatureError, type ResponseConstraint } from "../../protocol/index.js";

/**
 * Compiled grammars of response formats, most recently used kept, at most `limit` of them, keyed
 * by a hash of the GBNF they compile to (two schemas that compile alike share one): a client
 * sending a new JSON schema with every request costs a compile each time, never memory without bound.
 */
export class GrammarCache {
  readonly #llama: Llama;
  readonly #limit: number;
  readonly #grammars = new Map<string, Promise<LlamaGrammar>>();

  constructor(llama: Llama, limit: number) {
    this.#llama = llama;
    this.#limit = Math.max(1, limit);
  }

  /** Grammars held now. */
  get size(): number {
    return this.#grammars.size;
  }

  /**
   * The grammar enforcing `constraint`; `REQUEST_INVALID` naming the field (`response_format`'s
   * schema at the keyword's pointer, or `guided_grammar`) when it cannot be built.
   */
  async get(constraint: ResponseConstraint): Promise<LlamaGrammar> {
    let gbnf: string | undefined;
    try {
      // armature's own compiler (src/grammar): every keyword enforced, or refused by name.
      if (constraint.type !== "json_object")
        gbnf = constraint.type === "grammar" ? constraint.gbnf : schemaGbnf(constraint.schema);
    } catch (cause) {
      throw refusal(constraint, cause);
    }
    const key = gbnf === undefined ? "json" : createHash("sha256").update(gbnf).digest("hex");
    let grammar = this.#grammars.get(key);
    if (grammar) {
      // Most recently used last: Map keeps insertion order, so the first key is the least recent.
      this.#grammars.delete(key);
    } else {
      const text = gbnf;
      grammar =
        text === undefined
          ? this.#llama.getGrammarFor("json")
          : Promise.resolve().then(() => this.#llama.createGrammar({ grammar: text }));
    }
    this.#grammars.set(key, grammar);
    while (this.#grammars.size > this.#limit) this.#grammars.delete(this.#grammars.keys().next().value as string);
    try {
      return await grammar;
    } catch (cause) {
      this.#grammars.delete(key);
      throw refusal(constraint, cause);
    }
  }
}

/** Why `constraint` has no grammar: `REQUEST_INVALID` naming the field it came from. */
function refusal(constraint: ResponseConstraint, cause: unknown): ArmatureError {
  if (constraint.type === "grammar") {
    return new ArmatureError(
      "REQUEST_INVALID",
      `'${constraint.param}' is not a grammar llama.cpp reads: ${(cause as Error).message}`,
      {
        cause,
        param: constraint.param,
      },
    );
  }
  const param = cause instanceof SchemaRefusal ? `response_format.json_schema.schema${cause.pointer}` : "response_format";
  return new ArmatureError("REQUEST_INVALID", `response_format.json_schema cannot be enforced: ${(cause as Error).message}`, {
    cause,
    param,
  });
}
