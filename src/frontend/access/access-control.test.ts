import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { test } from "node:test";
import { PrometheusMeter } from "../../observability/index.js";
import { AccessControl, type AccessDecision, type RequestGrant } from "./access-control.js";
import type { ApiKeySpec } from "./api-keys-file.js";

const ALICE = "sk-alice-0123456789";
const BOB = "sk-bob-9876543210";

function request(method: string, headers: Record<string, string> = {}): IncomingMessage {
  return { method, headers } as unknown as IncomingMessage;
}

class FakeResponse extends EventEmitter {
  headersSent = false;
  statusCode = 200;
}

function setup(keys: ApiKeySpec[], metricsRequireKey = false) {
  const clock = { t: 0, now: () => clock.t };
  const meter = new PrometheusMeter();
  const access = new AccessControl({ keys, meter, clock, metricsRequireKey });
  const check = (method: string, path: string, headers: Record<string, string> = {}) => {
    const res = new FakeResponse();
    const decision = access.check(request(method, headers), res as unknown as ServerResponse, path);
    return { decision, res };
  };
  return { access, meter, clock, check };
}

function granted(decision: AccessDecision): RequestGrant {
  assert.equal(decision.kind, "granted", JSON.stringify(decision));
  return (decision as { grant: RequestGrant }).grant;
}

test("health, liveness and metrics are open; metrics asks for a key under metricsRequireKey", () => {
  const open = setup([{ key: ALICE, name: "alice" }]);
  for (const path of ["/health", "/live", "/metrics"]) assert.equal(open.check("GET", path).decision.kind, "open", path);
  const closed = setup([{ key: ALICE, name: "alice" }], true);
  assert.equal(closed.check("GET", "/metrics").decision.kind, "denied");
  assert.equal(closed.check("GET", "/metrics", { authorization: `Bearer ${ALICE}` }).decision.kind, "granted");
  assert.equal(closed.check("GET", "/live").decision.kind, "open");
});

test("no key and a wrong key are 401 invalid_api_key with a Bearer challenge", () => {
  const { check } = setup([{ key: ALICE, name: "alice" }]);
  const cases: [Record<string, string>, string, string][] = [
    [{}, "missing_key", 'Bearer realm="armature"'],
    [{ authorization: `Bearer ${BOB}` }, "invalid_key", 'Bearer realm="armature", error="invalid_token"'],
    [{ authorization: `Basic ${ALICE}` }, "invalid_key", 'Bearer realm="armature", error="invalid_token"'],
    [{ authorization: "Bearer" }, "invalid_key", 'Bearer realm="armature", error="invalid_token"'],
    [{ "x-api-key": `${ALICE}x` }, "invalid_key", 'Bearer realm="armature", error="invalid_token"'],
  ];
  for (const [headers, reason, challenge] of cases) {
    const { decision } = check("POST", "/v1/chat/completions", headers);
    assert.equal(decision.kind, "denied");
    if (decision.kind !== "denied") continue;
    assert.equal(decision.denial.status, 401);
    assert.equal(decision.denial.reason, reason);
    assert.deepEqual(decision.denial.headers, { "www-authenticate": challenge });
    assert.equal(decision.denial.body.error.type, "invalid_request_error");
    assert.equal(decision.denial.body.error.code, "invalid_api_key");
    assert.equal(decision.denial.body.error.param, null);
    assert.ok(!decision.denial.body.error.message.includes(ALICE));
  }
});

test("Bearer (any case) and x-api-key both carry the key; unknown paths need one too", () => {
  const { check } = setup([{ key: ALICE, name: "alice" }]);
  assert.equal(granted(check("POST", "/v1/completions", { authorization: `Bearer ${ALICE}` }).decision).keyName, "alice");
  assert.equal(granted(check("POST", "/v1/completions", { authorization: `bearer  ${ALICE}` }).decision).keyName, "alice");
  assert.equal(granted(check("GET", "/v1/models", { "x-api-key": ALICE }).decision).keyName, "alice");
  assert.equal(check("GET", "/nowhere").decision.kind, "denied");
});

test("a key over its request rate gets 429 type requests with Retry-After; GET /v1/models spends nothing", () => {
  const { check, clock } = setup([{ key: ALICE, name: "alice", requestsPerMinute: 1 }]);
  const auth = { authorization: `Bearer ${ALICE}` };
  granted(check("GET", "/v1/models", auth).decision);
  granted(check("POST", "/v1/chat/completions", auth).decision);
  const { decision } = check("POST", "/v1/chat/completions", auth);
  assert.equal(decision.kind, "denied");
  if (decision.kind !== "denied") return;
  assert.equal(decision.denial.status, 429);
  assert.deepEqual(decision.denial.headers, { "retry-after": "60" });
  assert.equal(decision.denial.body.error.type, "requests");
  assert.equal(decision.denial.body.error.code, "rate_limit_exceeded");
  assert.match(decision.denial.body.error.message, /requests per min \(RPM\): Limit 1\. Please try again in 60s/);
  clock.t = 45_000;
  const later = check("POST", "/v1/chat/completions", auth).decision;
  assert.equal(later.kind === "denied" && later.denial.headers["retry-after"], "15");
});

test("counting a message's tokens needs the key but spends none of its quota", () => {
  const { check } = setup([{ key: ALICE, name: "alice", requestsPerMinute: 1, maxConcurrent: 1 }]);
  const auth = { authorization: `Bearer ${ALICE}` };
  assert.equal(check("POST", "/v1/messages/count_tokens").decision.kind, "denied");
  for (let i = 0; i < 3; i++) granted(check("POST", "/v1/messages/count_tokens", auth).decision);
  granted(check("POST", "/v1/messages", auth).decision);
  const { decision } = check("POST", "/v1/messages/count_tokens", auth);
  granted(decision);
  assert.equal(check("POST", "/v1/messages", auth).decision.kind, "denied");
});

test("a concurrency slot is freed when the response closes", () => {
  const { check } = setup([{ key: ALICE, name: "alice", maxConcurrent: 1 }]);
  const auth = { "x-api-key": ALICE };
  const first = check("POST", "/v1/completions", auth);
  granted(first.decision);
  const second = check("POST", "/v1/completions", auth).decision;
  assert.equal(second.kind === "denied" && second.denial.body.error.type, "requests");
  first.res.emit("close");
  granted(check("POST", "/v1/completions", auth).decision);
});

test("usage is charged to the key: tokens counted by kind, and a spent budget refuses with type tokens", async () => {
  const { check, meter } = setup([{ key: ALICE, name: "alice", tokensPerMinute: 10 }]);
  const auth = { authorization: `Bearer ${ALICE}` };
  const { decision, res } = check("POST", "/v1/completions", auth);
  granted(decision).recordUsage(7, 5);
  res.headersSent = true;
  res.emit("close");
  const refused = check("POST", "/v1/completions", auth).decision;
  assert.equal(refused.kind, "denied");
  if (refused.kind !== "denied") return;
  assert.equal(refused.denial.body.error.type, "tokens");
  // 10 - 12 = -2: 3 tokens short of one, at 10 per 60 s
  assert.deepEqual(refused.denial.headers, { "retry-after": "18" });
  const text = await meter.render();
  assert.match(text, /armature_frontend_api_key_tokens_total\{key_name="alice",kind="prompt"\} 7/);
  assert.match(text, /armature_frontend_api_key_tokens_total\{key_name="alice",kind="completion"\} 5/);
  assert.match(text, /armature_frontend_api_key_requests_total\{key_name="alice",status="200"\} 1/);
  assert.match(text, /armature_frontend_api_key_rejected_total\{key_name="alice",reason="tokens_per_minute"\} 1/);
  assert.ok(!text.includes(ALICE));
});

test("a key limited to some models is refused others as model_not_found", async () => {
  const { check, meter } = setup([{ key: ALICE, name: "alice", models: ["m1"] }]);
  const grant = granted(check("POST", "/v1/completions", { authorization: `Bearer ${ALICE}` }).decision);
  assert.doesNotThrow(() => grant.checkModel("m1"));
  assert.throws(
    () => grant.checkModel("m2"),
    (error: Error & { code?: string; param?: string }) =>
      error.code === "MODEL_NOT_FOUND" &&
      error.param === "model" &&
      error.message === "The model `m2` does not exist or you do not have access to it.",
  );
  assert.deepEqual([grant.allowsModel("m1"), grant.allowsModel("m2")], [true, false]);
  assert.match(await meter.render(), /armature_frontend_api_key_rejected_total\{key_name="alice",reason="model_not_allowed"\} 1/);
});

test("replaced keys take effect at once; a kept name keeps its usage", () => {
  const { access, check } = setup([{ key: ALICE, name: "alice", requestsPerMinute: 1 }]);
  granted(check("POST", "/v1/completions", { authorization: `Bearer ${ALICE}` }).decision);
  access.replaceKeys([{ key: BOB, name: "alice", requestsPerMinute: 1 }]);
  assert.equal(check("POST", "/v1/completions", { authorization: `Bearer ${ALICE}` }).decision.kind, "denied");
  const bob = check("POST", "/v1/completions", { authorization: `Bearer ${BOB}` }).decision;
  assert.equal(bob.kind === "denied" && bob.denial.status, 429);
  assert.throws(() => access.replaceKeys([]), /no keys/);
});
