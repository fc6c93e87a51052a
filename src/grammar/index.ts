export { toGbnf } from "./gbnf.js";
export type { Grammar, GrammarNode } from "./grammar-ir.js";
export { grammarSize } from "./grammar-ir.js";
export { matchesGrammar } from "./grammar-matcher.js";
export { choiceAnswerGrammar, regexAnswerGrammar } from "./guided-grammars.js";
export { compileJsonSchema, MAX_GRAMMAR_SIZE, SchemaRefusal } from "./json-schema-grammar.js";
export { RegexRefusal } from "./regex-grammar.js";
export { schemaGbnf } from "./schema-gbnf.js";
