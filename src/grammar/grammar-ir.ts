/**
 * A context-free grammar over Unicode code points, as armature builds it before writing it out as
 * llama.cpp GBNF (`gbnf.ts`) or matching text against it in tests (`grammar-matcher.ts`).
 */
export type GrammarNode =
  | { readonly k: "lit"; readonly text: string }
  /** One code point in (or, negated, outside) the inclusive ranges. */
  | { readonly k: "class"; readonly ranges: readonly (readonly [number, number])[]; readonly negated: boolean }
  | { readonly k: "seq"; readonly items: readonly GrammarNode[] }
  | { readonly k: "alt"; readonly items: readonly GrammarNode[] }
  /** `max` undefined: unbounded. */
  | { readonly k: "rep"; readonly item: GrammarNode; readonly min: number; readonly max: number | undefined }
  | { readonly k: "ref"; readonly name: string };

export interface Grammar {
  /** Named rules; `root` is where matching starts. */
  readonly rules: ReadonlyMap<string, GrammarNode>;
}

export const lit = (text: string): GrammarNode => ({ k: "lit", text });
export const seq = (...items: GrammarNode[]): GrammarNode =>
  items.length === 1 ? (items[0] as GrammarNode) : { k: "seq", items };
export const alt = (...items: GrammarNode[]): GrammarNode =>
  items.length === 1 ? (items[0] as GrammarNode) : { k: "alt", items };
export const rep = (item: GrammarNode, min: number, max: number | undefined): GrammarNode => ({ k: "rep", item, min, max });
export const ref = (name: string): GrammarNode => ({ k: "ref", name });
export const opt = (item: GrammarNode): GrammarNode => rep(item, 0, 1);
export const EMPTY: GrammarNode = { k: "lit", text: "" };

/** A class of code points from characters and `[lo, hi]` pairs of characters. */
export function charClass(spec: readonly (string | readonly [string, string])[], negated = false): GrammarNode {
  const ranges = spec.flatMap((s): [number, number][] =>
    typeof s === "string"
      ? [...s].map((c) => [c.codePointAt(0) as number, c.codePointAt(0) as number])
      : [[s[0].codePointAt(0) as number, s[1].codePointAt(0) as number]],
  );
  return { k: "class", ranges, negated };
}

/** Rule and node count: what bounds the cost of a grammar. */
export function grammarSize(grammar: Grammar): number {
  let size = 0;
  const visit = (node: GrammarNode): void => {
    size++;
    if (node.k === "seq" || node.k === "alt") for (const item of node.items) visit(item);
    else if (node.k === "rep") visit(node.item);
  };
  for (const node of grammar.rules.values()) visit(node);
  return size;
}
