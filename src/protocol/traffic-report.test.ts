import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageInvalidError, subjects, trafficReportSchema } from "./index.js";

const report = {
  type: "traffic-report",
  frontendId: "frontend-1a2b3c4d",
  requests: 3,
  inputTokens: 600,
  outputTokens: 60,
  cachedTokens: 200,
  ttftMsSum: 180,
  ttftCount: 3,
  itlMsSum: 12,
  itlCount: 2,
};

test("a traffic report passes unchanged, on the frontend's own subject", () => {
  assert.deepEqual(trafficReportSchema.parse(report), report);
  // Arrivals are optional (older frontends send none) and may outnumber the requests that finished.
  assert.deepEqual(trafficReportSchema.parse({ ...report, arrivals: 7 }), { ...report, arrivals: 7 });
  assert.equal(subjects.trafficReport(report.frontendId), "armature.traffic.frontend-1a2b3c4d");
  assert.equal(subjects.allTrafficReports, "armature.traffic.*");
});

test("a malformed traffic report is refused by the field at fault", () => {
  const cases: [unknown, RegExp][] = [
    [{ ...report, requests: -1 }, /^requests must be in 0\.\./],
    [{ ...report, requests: 1.5 }, /^requests must be an integer/],
    [{ ...report, requests: 2 ** 21 }, /^requests must be in 0\.\.1048576/],
    [{ ...report, arrivals: -2 }, /^arrivals must be in 0\.\./],
    [{ ...report, arrivals: 2.5 }, /^arrivals must be an integer/],
    [{ ...report, arrivals: "7" }, /^arrivals must be an integer/],
    [{ ...report, inputTokens: "600" }, /^inputTokens must be an integer/],
    [{ ...report, ttftMsSum: Number.POSITIVE_INFINITY }, /^ttftMsSum must be a finite number/],
    [{ ...report, itlMsSum: -3 }, /^itlMsSum must be in 0\.\./],
    [{ ...report, ttftCount: 4 }, /^ttftCount must not exceed requests \(3\), got 4/],
    [{ ...report, itlCount: 4 }, /^itlCount must not exceed requests \(3\)/],
    [{ ...report, cachedTokens: 601 }, /^cachedTokens must not exceed inputTokens \(600\)/],
    [{ ...report, frontendId: "a.b" }, /^frontendId does not match/],
    [{ ...report, type: "traffic" }, /^type must be one of traffic-report/],
    [{ ...report, outputTokens: undefined }, /^outputTokens must be an integer, got undefined/],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => trafficReportSchema.parse(value),
      (e: unknown) => e instanceof MessageInvalidError && message.test(e.message),
      String(message),
    );
  }
});
