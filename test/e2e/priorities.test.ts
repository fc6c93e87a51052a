import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";

// Priorities and deadlines on real llama.cpp: one worker running one sequence, so every other
// request waits in the router's admission queue (4 places), where priority and deadline order it.
let server: ServeProcess;
let interactive: OpenAI;
const MODEL = "armature-tiny";
const KEYS = { interactive: `sk-i-${randomBytes(8).toString("hex")}`, batch: `sk-b-${randomBytes(8).toString("hex")}` };

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-priorities-"));
  const keys = join(dir, "keys.yaml");
  await writeFile(
    keys,
    `- {key: ${KEYS.interactive}, name: interactive}\n- {key: ${KEYS.batch}, name: batch, default_priority: 10, priority_ceiling: 5}\n`,
  );
  server = await startServe(["--sequences", "1", "--context-size", "8192", "--router-queue-size", "4", "--api-keys-file", keys], {
    ARMATURE_CACHE_DIR: dir,
  });
  interactive = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEYS.interactive, maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

function chat(key: string, body: object, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Hello" }], max_tokens: 4, ...body }),
    signal,
  });
}

/** A stream that holds the one sequence for seconds; resolves once its first token arrived. */
async function occupyTheWorker(): Promise<AbortController> {
  const controller = new AbortController();
  const res = await chat(KEYS.interactive, { max_tokens: 4000, ignore_eos: true, stream: true }, {}, controller.signal);
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  // Keep reading in the background so the stream is not held back by its client.
  (async () => {
    for (;;) if ((await reader.read()).done) return;
  })().catch(() => {});
  return controller;
}

async function metric(pattern: RegExp): Promise<string | undefined> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return text.split("\n").find((line) => pattern.test(line));
}

async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting until ${what}`);
}

test("under an overload that sheds, urgent requests run first and the batch key's are shed first", async () => {
  const blocker = await occupyTheWorker();
  const order: string[] = [];
  const refused: string[] = [];
  const track = (name: string, response: Promise<Response>) =>
    response.then(async (res) => {
      const body = (await res.json()) as { error?: { code: string } };
      if (res.status === 200) order.push(name);
      else {
        assert.equal(res.status, 503, JSON.stringify(body));
        refused.push(`${name} ${body.error?.code}`);
      }
    });
  // Six batch requests (the key's default priority, 10): four wait, the full queue refuses two.
  const batch = Array.from({ length: 6 }, (_, i) => track(`batch${i}`, chat(KEYS.batch, {})));
  await until("two batch requests are refused", () => refused.length === 2);
  assert.match((await metric(/^armature_frontend_router_queue_pending_requests /)) ?? "", / 4$/);
  // Two urgent ones through the official client: each takes the place of the last batch request.
  const urgent = [0, 1].map((i) => {
    const body = { model: MODEL, messages: [{ role: "user", content: "Hi" }], max_tokens: 4, priority: -1 };
    return interactive.chat.completions.create(body as ChatCompletionCreateParamsNonStreaming).then((completion) => {
      assert.equal(completion.object, "chat.completion");
      order.push(`urgent${i}`);
    });
  });
  await until("two more batch requests are shed", () => refused.length === 4);
  assert.ok(
    refused.every((r) => /^batch\d overloaded$/.test(r)),
    refused.join(", "),
  );
  blocker.abort();
  await Promise.all([...batch, ...urgent]);
  assert.deepEqual(
    order.slice(0, 2).sort(),
    ["urgent0", "urgent1"],
    `urgent requests ran before the waiting batch ones: ${order.join(", ")}`,
  );
  assert.equal(order.length, 4);
  // Every request carries --request-timeout's deadline, counted from its arrival: a batch request
  // that reached the queue after a later one outranks it and takes its place, so how the four
  // refusals split between full and displaced depends on timing; that all four are deferred does not.
  const shed = async (reason: string, band: string): Promise<number> =>
    Number(
      (
        await metric(
          new RegExp(
            `^armature_frontend_router_queue_shed_total\\{model="armature-tiny",reason="${reason}",priority_band="${band}"\\}`,
          ),
        )
      )?.split(" ")[1] ?? 0,
    );
  assert.equal((await shed("full", "deferred")) + (await shed("displaced", "deferred")), 4);
  assert.ok((await shed("displaced", "deferred")) >= 2, "each urgent request displaced a deferred one");
  assert.equal((await shed("full", "urgent")) + (await shed("displaced", "urgent")), 0);
});

test("a request whose deadline passes while it waits is shed with 503 before it reaches the worker", async () => {
  const blocker = await occupyTheWorker();
  try {
    const res = await chat(KEYS.interactive, {}, { "x-armature-deadline-ms": "300" });
    assert.equal(res.status, 503);
    const body = (await res.json()) as { error: { code: string; type: string; message: string } };
    assert.equal(body.error.code, "deadline_unreachable");
    assert.match(body.error.message, /deadline would pass before its first token/);
    assert.match((await metric(/reason="deadline",priority_band="default"/)) ?? "", / 1$/);
  } finally {
    blocker.abort();
  }
  // With the worker free again, the same deadline is met.
  const res = await chat(KEYS.interactive, {}, { "x-armature-deadline-ms": "30000" });
  assert.equal(res.status, 200);
});

test("priorities a key may not ask for, and malformed ones, are refused naming the field", async () => {
  const cases: [string, object, Record<string, string>, string][] = [
    [KEYS.batch, { priority: 0 }, {}, "priority"],
    [KEYS.batch, {}, { "x-armature-priority": "1" }, "x-armature-priority"],
    [KEYS.interactive, { priority: 1.5 }, {}, "priority"],
    [KEYS.interactive, { priority: 2 }, { "x-armature-priority": "3" }, "priority"],
    [KEYS.interactive, {}, { "x-armature-priority": "urgent" }, "x-armature-priority"],
    [KEYS.interactive, {}, { "x-armature-deadline-ms": "0" }, "x-armature-deadline-ms"],
  ];
  for (const [key, body, headers, param] of cases) {
    const res = await chat(key, body, headers);
    const answer = (await res.json()) as { error: { param: string; message: string } };
    assert.equal(res.status, 400, JSON.stringify({ body, headers, answer }));
    assert.equal(answer.error.param, param, answer.error.message);
  }
  // The batch key may ask for anything from its ceiling down.
  assert.equal((await chat(KEYS.batch, { priority: 5 })).status, 200);
});
