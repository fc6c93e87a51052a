import { alt, type Grammar, grammarSize, lit } from "./grammar-ir.js";
import { MAX_GRAMMAR_SIZE } from "./json-schema-grammar.js";
import { RegexRefusal, regexGrammar } from "./regex-grammar.js";

/**
 * vLLM's `guided_regex` and `guided_choice` as grammars over the whole answer (raw text, not a
 * JSON string): the text matches the regular expression whole, or is exactly one of the choices.
 * A regular-expression feature the grammar cannot hold throws a `RegexRefusal` naming it.
 */
export function regexAnswerGrammar(pattern: string): Grammar {
  return bounded({ rules: new Map([["root", regexGrammar(pattern, { json: false })]]) });
}

export function choiceAnswerGrammar(choices: readonly string[]): Grammar {
  return bounded({ rules: new Map([["root", alt(...choices.map((choice) => lit(choice)))]]) });
}

/** The grammar, or a refusal where it is larger than a JSON schema's may be. */
function bounded(grammar: Grammar): Grammar {
  const size = grammarSize(grammar);
  if (size > MAX_GRAMMAR_SIZE) throw new RegexRefusal(`a grammar of ${size} parts, more than the ${MAX_GRAMMAR_SIZE} allowed`);
  return grammar;
}
