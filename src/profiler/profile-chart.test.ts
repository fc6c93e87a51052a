import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { parseProfile } from "../planner/index.js";
import { renderProfileChart } from "./profile-chart.js";
import type { ProfileDocument } from "./profile-document.js";

/**
 * Checks that `text` is well-formed XML of the kind an SVG writer produces (elements, quoted
 * attributes, text, the five predefined entities; no DTD, comments or CDATA) and returns the
 * elements in document order. Throws on the first fault.
 */
function parseXmlElements(text: string): { name: string; attributes: Map<string, string> }[] {
  const elements: { name: string; attributes: Map<string, string> }[] = [];
  const open: string[] = [];
  const checkText = (chunk: string): void => {
    const bare = chunk.replace(/&(amp|lt|gt|quot|apos);/g, "");
    if (/[&<>]/.test(bare)) throw new Error(`unescaped markup in ${JSON.stringify(chunk)}`);
  };
  let at = 0;
  while (at < text.length) {
    const start = text.indexOf("<", at);
    if (start < 0) {
      checkText(text.slice(at));
      break;
    }
    checkText(text.slice(at, start));
    const end = text.indexOf(">", start);
    if (end < 0) throw new Error("unterminated tag");
    const tag = text.slice(start + 1, end);
    at = end + 1;
    if (tag.startsWith("/")) {
      const name = tag.slice(1).trim();
      if (open.pop() !== name) throw new Error(`</${name}> closes nothing open`);
      continue;
    }
    const selfClosing = tag.endsWith("/");
    const body = selfClosing ? tag.slice(0, -1) : tag;
    const match = /^([A-Za-z][\w:-]*)((?:\s+[A-Za-z][\w:-]*="[^"<]*")*)\s*$/.exec(body);
    if (!match) throw new Error(`malformed tag <${tag}>`);
    const attributes = new Map<string, string>();
    for (const [, key, value] of match[2]!.matchAll(/([A-Za-z][\w:-]*)="([^"]*)"/g)) {
      if (attributes.has(key!)) throw new Error(`attribute ${key} repeated in <${match[1]}>`);
      checkText(value!);
      attributes.set(key!, value!);
    }
    if (open.length === 0 && elements.length > 0) throw new Error("more than one root element");
    elements.push({ name: match[1]!, attributes });
    if (!selfClosing) open.push(match[1]!);
  }
  if (open.length > 0) throw new Error(`unclosed <${open.join("> <")}>`);
  return elements;
}

test("the chart is well-formed SVG with one TTFT line and one ITL line per context length", async () => {
  const fixture = await readFile(new URL("../planner/fixtures/tiny-profile.json", import.meta.url), "utf8");
  const document = JSON.parse(fixture) as ProfileDocument;
  parseProfile(document, "tiny-profile.json");
  const svg = renderProfileChart(document, "worker <tiny> & co");
  const elements = parseXmlElements(svg);
  assert.equal(elements[0]?.name, "svg");
  assert.equal(elements[0]?.attributes.get("xmlns"), "http://www.w3.org/2000/svg");
  const polylines = elements.filter((e) => e.name === "polyline");
  assert.equal(polylines.length, 1 + 2, "TTFT, then context 1000 and context 3000");
  const pointCounts = polylines.map((p) => p.attributes.get("points")!.split(" ").length);
  assert.deepEqual(pointCounts, [3, 3, 3]);
  for (const line of polylines) {
    for (const pair of line.attributes.get("points")!.split(" ")) {
      const [x, y] = pair.split(",").map(Number);
      assert.ok(x! >= 0 && x! <= 960 && y! >= 0 && y! <= 420, `point ${pair} inside the picture`);
    }
  }
  assert.match(svg, /worker &lt;tiny&gt; &amp; co/);
  for (const label of [
    "input length",
    "time to first token",
    "concurrency",
    "inter-token latency",
    "context 1000",
    "context 3000",
  ]) {
    assert.ok(svg.includes(label), label);
  }
});

test("a rising TTFT is drawn rising, and a single measured value still draws", () => {
  const document: ProfileDocument = {
    version: 1,
    prefill: [
      { inputTokens: 100, ttftMs: 10, tokensPerSecond: 10000 },
      { inputTokens: 400, ttftMs: 30, tokensPerSecond: 13333 },
    ],
    decode: [{ concurrency: 1, contextTokens: 500, itlMs: 5, tokensPerSecond: 200, kvUsage: 0.1 }],
  };
  const elements = parseXmlElements(renderProfileChart(document, "t"));
  const polylines = elements.filter((e) => e.name === "polyline");
  assert.equal(polylines.length, 2);
  const [first, second] = polylines[0]!.attributes
    .get("points")!
    .split(" ")
    .map((p) => p.split(",").map(Number));
  assert.ok(second![0]! > first![0]! && second![1]! < first![1]!, "right and up (SVG y grows downwards)");
  const single = polylines[1]!.attributes.get("points")!.split(",").map(Number);
  assert.ok(single.every(Number.isFinite));
});
