import { deepNesting, type Prng, pathsOf, randomJson, randomString, replaceAt, wrongValue } from "./fuzz-inputs.js";
import { httpRequest, type RawOutcome, rawRequest } from "./raw-http.js";

/** What one attack sent, and what it saw that a sound server would not do. */
export interface AttackReport {
  readonly input: string;
  readonly problems: readonly string[];
}

/** How an answer is judged: `error` must be 4xx (or 503); `any` may succeed; `framing` may close without a response. */
type Expectation = "error" | "any" | "framing";

const REQUEST_TIMEOUT_MS = 10_000;
const POST_ROUTES = ["/v1/chat/completions", "/v1/completions"] as const;

const chatBody = (rng: Prng): Record<string, unknown> => ({
  model: "armature-mocker",
  messages: [
    { role: "system", content: "be brief" },
    { role: "user", content: [{ type: "text", text: "hello" }] },
  ],
  max_tokens: 4,
  stream: rng.chance(0.5),
  stream_options: { include_usage: true },
  temperature: 0.7,
  top_p: 0.9,
  top_k: 40,
  min_p: 0.1,
  seed: 7,
  stop: ["\n\n", "END"],
  n: 1,
  presence_penalty: 0.1,
  frequency_penalty: 0.1,
  repetition_penalty: 1.1,
  ignore_eos: false,
  user: "fuzz",
  response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } },
  nvext: {
    router_config_override: { overlap_score_weight: 1, router_temperature: 0 },
    agent_hints: { kv_overlap_score_weight: 1 },
  },
});

const completionBody = (rng: Prng): Record<string, unknown> => {
  const { messages: _messages, response_format: _format, ...rest } = chatBody(rng);
  return { ...rest, prompt: rng.chance(0.5) ? "hello there" : [1, 2, 3, 4], echo: false };
};

const bodyFor = (rng: Prng, route: string): Record<string, unknown> =>
  route === "/v1/completions" ? completionBody(rng) : chatBody(rng);

/** Judges one answer: never a hang, never a 5xx other than 503, and errors in OpenAI's shape. */
export function judge(request: string, outcome: RawOutcome, expect: Expectation): string[] {
  if (outcome.kind === "timeout")
    return [`no complete answer within ${REQUEST_TIMEOUT_MS} ms (got ${JSON.stringify(outcome.partial)})`];
  if (outcome.kind === "closed") return expect === "framing" ? [] : [`connection closed without a response`];
  const { status, body } = outcome;
  if (!(status >= 100 && status < 600)) return [`unparseable status line in ${JSON.stringify(outcome.headers.slice(0, 80))}`];
  if (status >= 500 && status !== 503) return [`status ${status}: ${body.slice(0, 300)}`];
  if (status < 400) return expect === "error" ? [`status ${status} for input that must be refused`] : [];
  if (/^HEAD /.test(request)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [`status ${status} without a JSON body: ${JSON.stringify(body.slice(0, 200))}`];
  }
  const error = (parsed as { error?: { message?: unknown; type?: unknown } } | null)?.error;
  if (typeof error?.message !== "string" || typeof error.type !== "string") {
    return [`status ${status} body is not an OpenAI error: ${body.slice(0, 200)}`];
  }
  return [];
}

async function send(
  url: string,
  pieces: readonly (Buffer | string)[],
  expect: Expectation,
  options: { endAfterWrite?: boolean } = {},
): Promise<string[]> {
  const request = pieces[0]?.toString("latin1").slice(0, 20) ?? "";
  return judge(request, await rawRequest(url, pieces, { timeoutMs: REQUEST_TIMEOUT_MS, ...options }), expect);
}

type HttpAttack = (rng: Prng, url: string) => Promise<AttackReport>;

const randomJsonBody: HttpAttack = async (rng, url) => {
  const route = rng.pick(POST_ROUTES);
  const value = randomJson(rng, 4);
  const body = JSON.stringify(value) ?? "null";
  return { input: `POST ${route} ${body.slice(0, 200)}`, problems: await send(url, [httpRequest("POST", route, body)], "error") };
};

const wrongFields: HttpAttack = async (rng, url) => {
  const route = rng.pick(POST_ROUTES);
  let body: unknown = bodyFor(rng, route);
  const paths = pathsOf(body);
  const changed: string[] = [];
  for (let i = 1 + rng.int(3); i > 0; i--) {
    const path = rng.pick(paths);
    const replacement = wrongValue(
      rng,
      path.reduce<unknown>((v, k) => (v as Record<string, unknown>)?.[k], body),
    );
    body = replaceAt(body, path, replacement);
    changed.push(`${path.join(".")}=${(JSON.stringify(replacement) ?? "undefined").slice(0, 80)}`);
  }
  const problems = await send(url, [httpRequest("POST", route, JSON.stringify(body))], "any");
  return { input: `POST ${route} with ${changed.join(", ")}`, problems };
};

const hugeValues: HttpAttack = async (rng, url) => {
  const route = rng.pick(POST_ROUTES);
  const size = rng.pick([100_000, 1_000_000, 8 * 1024 * 1024 - 200, 9 * 1024 * 1024]);
  const huge = "z".repeat(size);
  const base = bodyFor(rng, route);
  const variant = rng.int(4);
  const body =
    variant === 0
      ? { ...base, messages: [{ role: "user", content: huge }], prompt: huge }
      : variant === 1
        ? { ...base, stop: Array.from({ length: Math.min(size / 10, 100_000) }, (_, i) => `s${i}`) }
        : variant === 2
          ? { ...base, model: huge }
          : { ...base, messages: Array.from({ length: Math.min(size / 40, 200_000) }, () => ({ role: "user", content: "a" })) };
  const text = JSON.stringify(body);
  const request = httpRequest("POST", route, text, { connection: rng.pick(["keep-alive", "close"]) });
  // Over the body limit the server answers 413 before reading the body and closes; the close can
  // reset the connection before the client reads the 413 (no lingering close), so either is taken.
  const expect: Expectation = text.length > 8 * 1024 * 1024 ? "framing" : "any";
  return {
    input: `POST ${route} huge variant ${variant} (${text.length} bytes)`,
    problems: await send(url, [request], expect),
  };
};

const deepValues: HttpAttack = async (rng, url) => {
  const route = rng.pick(POST_ROUTES);
  const depth = rng.pick([1_000, 10_000, 100_000]);
  const shape = rng.pick(["array", "object"] as const);
  const nested = deepNesting(depth, shape);
  const field = rng.pick(["body", "messages", "content", "prompt", "stop", "schema", "nvext"]);
  const bodies: Record<string, string> = {
    body: nested,
    messages: `{"model":"armature-mocker","messages":${nested}}`,
    content: `{"model":"armature-mocker","messages":[{"role":"user","content":${nested}}],"prompt":${nested}}`,
    prompt: `{"model":"armature-mocker","prompt":${nested}}`,
    stop: `{"model":"armature-mocker","messages":[{"role":"user","content":"hi"}],"prompt":"hi","stop":${nested}}`,
    schema: `{"model":"armature-mocker","messages":[{"role":"user","content":"hi"}],"prompt":"hi","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":${nested}}}}}`,
    nvext: `{"model":"armature-mocker","messages":[{"role":"user","content":"hi"}],"prompt":"hi","nvext":{"router_config_override":${nested}}}`,
  };
  const body = bodies[field] as string;
  return {
    input: `POST ${route} with ${depth} nested ${shape}s in ${field}`,
    problems: await send(url, [httpRequest("POST", route, body)], "any"),
  };
};

const truncatedBodies: HttpAttack = async (rng, url) => {
  const route = rng.pick(POST_ROUTES);
  const full = Buffer.from(JSON.stringify(bodyFor(rng, route)));
  const cut = rng.int(full.length);
  if (rng.chance(0.5)) {
    // Honest framing of a cut JSON document: a 400.
    const request = httpRequest("POST", route, full.subarray(0, cut));
    return { input: `POST ${route} JSON cut at ${cut}/${full.length}`, problems: await send(url, [request], "error") };
  }
  // Declares the full length, sends part of it and gives up.
  const request = httpRequest("POST", route, full, {});
  const sent = request.subarray(0, request.length - (full.length - cut));
  const problems = await send(url, [sent], "framing", { endAfterWrite: true });
  return { input: `POST ${route} declaring ${full.length} bytes, sending ${cut}, then FIN`, problems };
};

const badBytes: HttpAttack = async (rng, url) => {
  const route = rng.pick(POST_ROUTES);
  const json = Buffer.from(JSON.stringify(bodyFor(rng, route)));
  const variant = rng.int(3);
  let body: Buffer;
  if (variant === 0) body = rng.bytes(1 + rng.int(4096));
  else if (variant === 1) {
    // Invalid UTF-8 inside a string value: the request may well be served.
    const at = json.indexOf("hello");
    body = Buffer.concat([json.subarray(0, at), Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80]), json.subarray(at)]);
  } else body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf, 0xff]), json]);
  const expect: Expectation = variant === 0 ? "error" : "any";
  return {
    input: `POST ${route} bad bytes variant ${variant}`,
    problems: await send(url, [httpRequest("POST", route, body)], expect),
  };
};

const badFraming: HttpAttack = async (rng, url) => {
  const route = rng.pick(POST_ROUTES);
  const body = JSON.stringify(bodyFor(rng, route));
  const head = (extra: string): string =>
    `POST ${route} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n${extra}\r\n`;
  const variants = [
    head("content-length: abc\r\n") + body,
    head("content-length: -5\r\n") + body,
    head("content-length: 99999999999999999999999\r\n") + body,
    head(`content-length: 4\r\ncontent-length: ${body.length}\r\n`) + body,
    head(`content-length: ${body.length}\r\ntransfer-encoding: chunked\r\n`) + body,
    `${head("transfer-encoding: chunked\r\n")}zz\r\n${body}\r\n0\r\n\r\n`,
    `${head("transfer-encoding: chunked\r\n")}ffffffffffffffff\r\n${body}\r\n0\r\n\r\n`,
    head(`content-length: 3\r\n`) + body,
    `${route} POST HTTP/9.9\r\n\r\n`,
    `POST ${route}\r\n\r\n`,
    `\u0000\u0001\u0002 garbage\r\n\r\n`,
    head("content-length: 1e3\r\n") + body,
  ];
  const index = rng.int(variants.length);
  // FIN after the bytes: a declared chunk or length the client never sends is its own stall, not the server's.
  const problems = await send(url, [Buffer.from(variants[index] as string, "latin1")], "framing", { endAfterWrite: true });
  return { input: `POST ${route} framing variant ${index}`, problems };
};

const oddRequests: HttpAttack = async (rng, url) => {
  const method = rng.pick(["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "POST", "CONNECT", "PROPFIND"]);
  const path = rng.pick([
    "/v1/chat/completions",
    "/v1/models",
    "/health",
    "/live",
    "/metrics",
    "/v1/models/armature-mocker",
    "/v1/chat/completions/../models",
    "//",
    "/%00",
    "/%ff%fe",
    `/v1/models?${"x=1&".repeat(2000)}`,
    `/${[...Buffer.from(randomString(rng, 30))].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("")}`,
    "/v1/embeddings",
  ]);
  const body = rng.chance(0.5) ? JSON.stringify(randomJson(rng, 2)) : undefined;
  // A query string does not change the route: clients add their own (Azure's `api-version`), and a
  // GET of a known route still answers.
  const route = path.split("?")[0] as string;
  const known = ["/v1/models", "/health", "/live", "/metrics"].includes(route) && (method === "GET" || method === "HEAD");
  // Node closes a CONNECT without an answer (no tunnel here): nothing is held, so a close is fine.
  const expect: Expectation = method === "CONNECT" ? "framing" : known || method === "POST" ? "any" : "error";
  const problems = await send(url, [httpRequest(method, path, body)], expect);
  return { input: `${method} ${path.slice(0, 80)}${body ? ` body ${body.slice(0, 80)}` : ""}`, problems };
};

const hugeHeaders: HttpAttack = async (rng, url) => {
  const route = rng.pick([...POST_ROUTES, "/health"]);
  const variant = rng.int(4);
  const headers: Record<string, string> =
    variant === 0
      ? { "x-huge": "h".repeat(rng.pick([10_000, 100_000, 1_000_000])) }
      : variant === 1
        ? Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`x-h${i}`, "v"]))
        : variant === 2
          ? { "x-request-id": "r".repeat(5000), authorization: `Bearer ${"k".repeat(5000)}`, "x-api-key": "\u00ff\u00fe" }
          : { "content-type": randomString(rng, 200).replace(/[\r\n]/g, "") };
  const body = route === "/health" ? undefined : JSON.stringify(bodyFor(rng, route));
  const method = route === "/health" ? "GET" : "POST";
  const problems = await send(url, [httpRequest(method, route, body, headers)], "framing");
  return { input: `${method} ${route} header variant ${variant}`, problems };
};

/** Many clients trickling a request head; meanwhile `/health` must still answer. */
const slowClients: HttpAttack = async (rng, url) => {
  const clients = 10 + rng.int(30);
  const head = httpRequest("POST", "/v1/chat/completions", JSON.stringify(chatBody(rng))).toString("latin1");
  const pieces = head.match(/[\s\S]{1,8}/g) ?? [];
  const slow = Array.from({ length: clients }, () =>
    rawRequest(url, pieces.slice(0, 15), { timeoutMs: 2500, pieceDelayMs: 150 }),
  );
  const started = Date.now();
  const health = await rawRequest(url, [httpRequest("GET", "/health", undefined)], { timeoutMs: 2000 });
  const problems: string[] = [];
  if (health.kind !== "response" || health.status !== 200) {
    problems.push(`/health did not answer within 2 s while ${clients} clients trickled (${health.kind})`);
  }
  await Promise.all(slow);
  return { input: `${clients} clients trickling a request head for ${Date.now() - started} ms`, problems };
};

/** Every HTTP attack, by name. */
export const httpAttacks: Readonly<Record<string, HttpAttack>> = {
  randomJsonBody,
  wrongFields,
  hugeValues,
  deepValues,
  truncatedBodies,
  badBytes,
  badFraming,
  oddRequests,
  hugeHeaders,
  slowClients,
};
