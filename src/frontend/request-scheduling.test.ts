import assert from "node:assert/strict";
import { test } from "node:test";
import { DEADLINE_HEADER, PRIORITY_HEADER, requestBudgetMs, requestPriority } from "./request-scheduling.js";

test("the budget is the deadline header or the server's timeout, whichever is sooner", () => {
  assert.equal(requestBudgetMs({}, undefined), undefined);
  assert.equal(requestBudgetMs({}, 30_000), 30_000);
  assert.equal(requestBudgetMs({ [DEADLINE_HEADER]: "1500" }, undefined), 1500);
  assert.equal(requestBudgetMs({ [DEADLINE_HEADER]: "1500" }, 1000), 1000);
  assert.equal(requestBudgetMs({ [DEADLINE_HEADER]: " 800 " }, 1000), 800);
});

test("a malformed deadline header is refused naming it", () => {
  for (const bad of ["0", "-5", "1.5", "soon", "", "86400001", ["100", "200"]]) {
    assert.throws(
      () => requestBudgetMs({ [DEADLINE_HEADER]: bad }, undefined),
      { code: "REQUEST_INVALID", param: DEADLINE_HEADER },
      `header ${JSON.stringify(bad)}`,
    );
  }
});

test("the priority comes from the body or the header, and the two must agree", () => {
  assert.equal(requestPriority({}, undefined, undefined), undefined);
  assert.equal(requestPriority({}, 3, undefined), 3);
  assert.equal(requestPriority({ [PRIORITY_HEADER]: "-2" }, undefined, undefined), -2);
  assert.equal(requestPriority({ [PRIORITY_HEADER]: "7" }, 7, undefined), 7);
  assert.throws(() => requestPriority({ [PRIORITY_HEADER]: "1" }, 2, undefined), { code: "REQUEST_INVALID", param: "priority" });
  for (const bad of ["high", "1e3", "2147483648", "0.5"]) {
    assert.throws(() => requestPriority({ [PRIORITY_HEADER]: bad }, undefined, undefined), {
      code: "REQUEST_INVALID",
      param: PRIORITY_HEADER,
    });
  }
});
