import { alt, type Grammar, lit } from "./grammar-ir.js";
import { regexGrammar } from "./regex-grammar.js";

/**
 * vLLM's `guided_regex` and `guided_choice` as grammars over the whole answer (raw text, not a
 * JSON string): the text matches the regular expression whole, or is exactly one of the choices.
 * A regular-expression feature the grammar cannot hold throws a `RegexRefusal` naming it.
 */
export function regexAnswerGrammar(pattern: string): Grammar {
  return { rules: new Map([["root", regexGrammar(pattern, { json: false })]]) };
}

export function choiceAnswerGrammar(choices: readonly string[]): Grammar {
  return { rules: new Map([["root", alt(...choices.map((choice) => lit(choice)))]]) };
}
