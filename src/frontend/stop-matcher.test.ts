import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteTokenizer } from "../engines/index.js";
import { IncrementalDetokenizer } from "./incremental-detokenizer.js";
import { MAX_STOP_LENGTH, StopMatcher } from "./stop-matcher.js";

test("a stop string split across deltas is found and nothing after it leaks", () => {
  const m = new StopMatcher(["END"]);
  assert.deepEqual(m.push("hello E"), { text: "hello ", stopped: false });
  assert.deepEqual(m.push("N"), { text: "", stopped: false });
  assert.deepEqual(m.push("D and more"), { text: "", stopped: true });
});

test("held text that turns out not to be a stop string is released", () => {
  const m = new StopMatcher(["END"]);
  assert.deepEqual(m.push("E"), { text: "", stopped: false });
  assert.deepEqual(m.push("x"), { text: "Ex", stopped: false });
  assert.deepEqual(m.push("EN"), { text: "", stopped: false });
  assert.equal(m.flush(), "EN");
});

test("the earliest of several stop strings wins", () => {
  const m = new StopMatcher(["world", "lo"]);
  assert.deepEqual(m.push("hello world"), { text: "hel", stopped: true });
  assert.equal(m.found, "lo");
});

test("found names the stop string that ended the text, and nothing before one has", () => {
  const m = new StopMatcher(["END", "STOP"]);
  assert.deepEqual(m.push("one ST"), { text: "one ", stopped: false });
  assert.equal(m.found, undefined);
  assert.deepEqual(m.push("OP END"), { text: "", stopped: true });
  assert.equal(m.found, "STOP");
});

test("multi-byte characters split across tokens come out whole", () => {
  const tokenizer = new ByteTokenizer();
  const text = "naïve 🦊 café";
  const detok = new IncrementalDetokenizer(tokenizer);
  const deltas = tokenizer.encode(text).map((t) => detok.push([t]));
  assert.ok(deltas.every((d) => !d.includes("\uFFFD")));
  assert.equal(deltas.join("") + detok.flush(), text);
});

test("an incomplete character at the end is flushed as a replacement character", () => {
  const tokenizer = new ByteTokenizer();
  const detok = new IncrementalDetokenizer(tokenizer);
  const ids = [...tokenizer.encode("ok "), 0xf0, 0x9f];
  const streamed = ids.map((t) => detok.push([t])).join("") + detok.flush();
  assert.equal(streamed, tokenizer.decode(ids));
});

test("a stop string with repeated parts is found across deltas after a false start", () => {
  // KMP's case: "aab" inside "aaab" must not be missed when the first "aa" turns out wrong.
  const m = new StopMatcher(["aab"]);
  assert.deepEqual(m.push("xa"), { text: "x", stopped: false });
  assert.deepEqual(m.push("a"), { text: "", stopped: false });
  assert.deepEqual(m.push("a"), { text: "a", stopped: false });
  assert.deepEqual(m.push("b!"), { text: "", stopped: true });
});

test("the stop that starts first wins even when a shorter one ends first", () => {
  const m = new StopMatcher(["bc", "abcd"]);
  assert.deepEqual(m.push("xab"), { text: "x", stopped: false });
  assert.deepEqual(m.push("cd"), { text: "", stopped: true });
});

test("streaming agrees with searching all the text received after each delta, for random texts and stops", () => {
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const word = (n: number) => Array.from({ length: n }, () => "ab"[rand(2)]).join("");
  for (let round = 0; round < 2000; round++) {
    const stops = [word(1 + rand(6)), word(1 + rand(6))];
    const text = word(5 + rand(30));
    const cuts: number[] = [];
    for (let i = 0; i < text.length; i += 1 + rand(4)) cuts.push(i);
    const deltas = cuts.map((at, i) => text.slice(at, cuts[i + 1] ?? text.length));
    // Reference: after each delta, the earliest stop anywhere in the text so far ends the stream there.
    let expected = text;
    for (let seen = 0, i = 0; i < deltas.length; i++) {
      seen += (deltas[i] as string).length;
      const hits = stops.map((s) => text.slice(0, seen).indexOf(s)).filter((at) => at >= 0);
      if (hits.length > 0) {
        expected = text.slice(0, Math.min(...hits));
        break;
      }
    }
    const m = new StopMatcher(stops);
    let out = "";
    let stopped = false;
    for (const delta of deltas) {
      const r = m.push(delta);
      out += r.text;
      stopped = r.stopped;
      if (stopped) break;
    }
    if (!stopped) out += m.flush();
    assert.equal(out, expected, `stops ${stops} in ${deltas.join("|")}`);
  }
});

test("a longest stop string of repeated characters holds back only what may still start it", () => {
  const stop = `${"a".repeat(MAX_STOP_LENGTH - 1)}b`;
  const feed = () => {
    const m = new StopMatcher([stop, stop.replace("b", "c")]);
    let out = "";
    for (let i = 0; i < 5000; i++) out += m.push("a").text;
    return { m, out };
  };
  const ended = feed();
  assert.equal(ended.out.length, 5000 - (MAX_STOP_LENGTH - 1));
  assert.equal(ended.m.flush().length, MAX_STOP_LENGTH - 1, "nothing lost");
  const stopped = feed();
  assert.deepEqual(stopped.m.push("b"), { text: "", stopped: true });
});
