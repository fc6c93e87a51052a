import type { Template } from "@huggingface/jinja";
import { ArmatureError } from "../protocol/index.js";

/** The name a template's `range(…)` calls are given: the bounded range is passed in under it. */
export const BOUNDED_RANGE = "__armature_bounded_range";

/** Numbers `range()` may hand one rendering of a chat template, in all its calls together. */
export const TEMPLATE_RANGE_BUDGET = 100_000;

/**
 * Jinja's `range()` for one rendering of a worker-supplied chat template, with a budget shared by
 * all its calls: a template's own loops are the one thing in it that is not bounded by the
 * request's size (`{% for i in range(10**9) %}` would hold the event loop for minutes), so past
 * `budget` numbers the rendering stops with an error that says so. Chat templates count tools or
 * turns with it: tens of numbers.
 */
export function boundedRange(budget = TEMPLATE_RANGE_BUDGET): (start: number, stop?: number, step?: number) => number[] {
  let left = budget;
  return (start, stop, step = 1) => {
    const [from, to] = stop === undefined ? [0, start] : [start, stop];
    if (step === 0) throw new Error("range() step must not be zero");
    const count = Math.max(0, Math.ceil((to - from) / step));
    if (!Number.isFinite(count) || count > left) {
      throw new ArmatureError(
        "MODEL_LOAD_FAILED",
        `the model's chat template asked range() for more than ${budget.toLocaleString("en-US")} numbers in one rendering; it is refused so that a template cannot stall the frontend`,
      );
    }
    left -= count;
    return Array.from({ length: count }, (_, i) => from + i * step);
  };
}

/**
 * Points every `range(…)` call of a parsed template at `BOUNDED_RANGE` (Jinja's `range` is a global
 * a rendering cannot replace), so a rendering given `{ [BOUNDED_RANGE]: boundedRange() }` counts
 * its loops. Attribute names and other identifiers are left as they are.
 */
export function boundRangeCalls(template: Template): Template {
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (typeof node !== "object" || node === null) return;
    const call = node as { type?: unknown; callee?: { type?: unknown; value?: unknown } };
    if (call.type === "CallExpression" && call.callee?.type === "Identifier" && call.callee.value === "range") {
      call.callee.value = BOUNDED_RANGE;
    }
    for (const child of Object.values(node)) visit(child);
  };
  visit(template.parsed);
  return template;
}
