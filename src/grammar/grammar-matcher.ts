import type { Grammar, GrammarNode } from "./grammar-ir.js";

/**
 * Whether `text` is in the grammar's language, from its `root`: every way through is followed
 * (the sets of positions each node can end at, remembered per rule and position), so it answers
 * for ambiguous grammars too. For tests and diagnostics: it feeds an instance through the grammar
 * a model would be held to, without a model.
 */
export function matchesGrammar(grammar: Grammar, text: string): boolean {
  const points = [...text].map((c) => c.codePointAt(0) as number);
  const memo = new Map<string, ReadonlySet<number>>();
  const active = new Set<string>();

  const ends = (node: GrammarNode, pos: number): ReadonlySet<number> => {
    switch (node.k) {
      case "lit": {
        const chars = [...node.text];
        for (let i = 0; i < chars.length; i++) if (points[pos + i] !== chars[i]?.codePointAt(0)) return new Set();
        return new Set([pos + chars.length]);
      }
      case "class": {
        const point = points[pos];
        if (point === undefined) return new Set();
        const inside = node.ranges.some(([lo, hi]) => point >= lo && point <= hi);
        return inside !== node.negated ? new Set([pos + 1]) : new Set();
      }
      case "seq": {
        let current: ReadonlySet<number> = new Set([pos]);
        for (const item of node.items) {
          const next = new Set<number>();
          for (const p of current) for (const e of ends(item, p)) next.add(e);
          current = next;
          if (current.size === 0) break;
        }
        return current;
      }
      case "alt": {
        const out = new Set<number>();
        for (const item of node.items) for (const e of ends(item, pos)) out.add(e);
        return out;
      }
      case "rep": {
        const out = new Set<number>();
        let current: ReadonlySet<number> = new Set([pos]);
        const seen = new Set<number>();
        if (node.min === 0) out.add(pos);
        for (let i = 1; node.max === undefined || i <= node.max; i++) {
          const next = new Set<number>();
          for (const p of current) for (const e of ends(node.item, p)) next.add(e);
          if (next.size === 0) break;
          if (i >= node.min) for (const e of next) out.add(e);
          // Unbounded repetition: stop once no position is new (an item that can match nothing).
          const fresh = [...next].filter((p) => !seen.has(p));
          for (const p of next) seen.add(p);
          if (node.max === undefined && fresh.length === 0 && i >= node.min) break;
          current = next;
        }
        return out;
      }
      case "ref": {
        const key = `${node.name}@${pos}`;
        const known = memo.get(key);
        if (known) return known;
        if (active.has(key)) return new Set();
        const rule = grammar.rules.get(node.name);
        if (!rule) throw new Error(`the grammar has no rule ${node.name}`);
        active.add(key);
        const result = ends(rule, pos);
        active.delete(key);
        memo.set(key, result);
        return result;
      }
    }
  };
  return ends({ k: "ref", name: "root" }, 0).has(points.length);
}
