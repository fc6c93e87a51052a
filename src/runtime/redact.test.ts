import assert from "node:assert/strict";
import { test } from "node:test";
import { redactSecrets, redactUrl } from "./redact.js";

test("a URL's user and password are hidden, the rest kept", () => {
  assert.equal(redactUrl("nats://arm:pw@10.0.0.1:4222"), "nats://***@10.0.0.1:4222");
  assert.equal(redactUrl("nats://token-only@h:1"), "nats://***@h:1");
  assert.equal(redactUrl("etcd://h:2379"), "etcd://h:2379");
});

test("URLs inside a message and given secrets are hidden", () => {
  assert.equal(
    redactSecrets("cannot reach etcd://root:pw@h:1 with pass s3cret", ["s3cret"]),
    "cannot reach etcd://***@h:1 with pass ***",
  );
});
