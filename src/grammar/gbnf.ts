import type { Grammar, GrammarNode } from "./grammar-ir.js";

/**
 * The grammar in llama.cpp's GBNF (grammars/README.md of llama.cpp): `name ::= expr` per rule, the
 * start rule `root`. Every code point outside plain ASCII letters, digits and spaces is written as
 * an escape (`\xHH`, `\uHHHH`, `\UHHHHHHHH`), so no character of a schema can break the syntax.
 */
export function toGbnf(grammar: Grammar): string {
  const lines: string[] = [];
  for (const [name, node] of grammar.rules) lines.push(`${name} ::= ${render(node, false)}`);
  return `${lines.join("\n")}\n`;
}

function render(node: GrammarNode, nested: boolean): string {
  switch (node.k) {
    case "lit":
      return `"${[...node.text].map(escapeChar).join("")}"`;
    case "class":
      return `[${node.negated ? "^" : ""}${node.ranges.map(([lo, hi]) => (lo === hi ? code(lo) : `${code(lo)}-${code(hi)}`)).join("")}]`;
    case "ref":
      return node.name;
    case "seq": {
      const text = node.items.map((item) => render(item, true)).join(" ");
      return nested ? `(${text})` : text;
    }
    case "alt": {
      const text = node.items.map((item) => render(item, false)).join(" | ");
      return nested ? `(${text})` : text;
    }
    case "rep": {
      const inner = render(node.item, true);
      const { min, max } = node;
      if (min === 0 && max === 1) return `${inner}?`;
      if (min === 0 && max === undefined) return `${inner}*`;
      if (min === 1 && max === undefined) return `${inner}+`;
      return max === undefined ? `${inner}{${min},}` : min === max ? `${inner}{${min}}` : `${inner}{${min},${max}}`;
    }
  }
}

function escapeChar(char: string): string {
  return /^[A-Za-z0-9 ]$/.test(char) ? char : code(char.codePointAt(0) as number);
}

function code(point: number): string {
  if (point <= 0xff) return `\\x${point.toString(16).padStart(2, "0")}`;
  if (point <= 0xffff) return `\\u${point.toString(16).padStart(4, "0")}`;
  return `\\U${point.toString(16).padStart(8, "0")}`;
}
