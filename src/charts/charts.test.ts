import assert from "node:assert/strict";
import { test } from "node:test";
import { escapeXml, renderLineChart, seriesColor } from "./index.js";

test("text is escaped for SVG content and attributes", () => {
  assert.equal(escapeXml(`a < b & "c" > d`), "a &lt; b &amp; &quot;c&quot; &gt; d");
});

test("a line chart draws one polyline per series in the shared palette, with escaped legend names", () => {
  const svg = renderLineChart(
    "goodput <by> rate",
    [1, 2, 4],
    [
      { name: "aggregated", y: [1, 2, 3] },
      { name: "disaggregated & routed", y: [2, 3, 5] },
    ],
    { x: "requests/s", y: "goodput" },
  );
  assert.ok(svg.startsWith("<svg") && svg.endsWith("</svg>"));
  assert.equal(svg.match(/<polyline/g)?.length, 2);
  assert.equal(svg.match(/<circle/g)?.length, 6);
  assert.ok(svg.includes(`stroke="${seriesColor(0)}"`) && svg.includes(`stroke="${seriesColor(1)}"`));
  assert.ok(svg.includes("goodput &lt;by&gt; rate"));
  assert.ok(svg.includes("disaggregated &amp; routed"));
});
