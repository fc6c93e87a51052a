import assert from "node:assert/strict";
import { test } from "node:test";
import { apiKeysFromFlags, joinKeyLists, parseApiKeys } from "./api-keys-file.js";

const SECRET = "sk-secret-0123456789";

test("a YAML list gives one spec per entry, limits and models as written", () => {
  const specs = parseApiKeys(
    `- key: ${SECRET}
  name: alice
  requests_per_minute: 60
  tokens_per_minute: 100000
  max_concurrent: 4
  models: [armature-mocker, other]
- key: sk-bob
  name: bob
`,
    "keys.yaml",
  );
  assert.deepEqual(specs, [
    {
      key: SECRET,
      name: "alice",
      requestsPerMinute: 60,
      tokensPerMinute: 100000,
      maxConcurrent: 4,
      models: ["armature-mocker", "other"],
    },
    { key: "sk-bob", name: "bob" },
  ]);
});

test("a key's default priority and ceiling are read as written", () => {
  const specs = parseApiKeys(
    "- {key: k1, name: batch, default_priority: 10, priority_ceiling: 5}\n- {key: k2, name: ops, priority_ceiling: -3}\n",
    "keys.yaml",
  );
  assert.deepEqual(specs, [
    { key: "k1", name: "batch", defaultPriority: 10, priorityCeiling: 5 },
    { key: "k2", name: "ops", priorityCeiling: -3 },
  ]);
});

test("JSON is read the same way", () => {
  const specs = parseApiKeys(JSON.stringify([{ key: "k1", name: "a", max_concurrent: 2 }]), "keys.json");
  assert.deepEqual(specs, [{ key: "k1", name: "a", maxConcurrent: 2 }]);
});

test("an unknown field is refused by name, with the entry it is in", () => {
  assert.throws(
    () => parseApiKeys(`- {key: k, name: ok}\n- {key: ${SECRET}, name: alice, rpm: 5}\n`, "keys.yaml"),
    (error: Error) => {
      assert.equal(
        error.message,
        "keys file keys.yaml: entry 2 ('alice'): unknown field 'rpm'; fields are key, name, requests_per_minute, tokens_per_minute, max_concurrent, models, default_priority, priority_ceiling",
      );
      return true;
    },
  );
});

test("bad values are refused, and no message quotes a key", () => {
  const cases: [string, RegExp][] = [
    [`{key: ${SECRET}, name: a}`, /the file must be a list/],
    ["[]", /the list is empty/],
    [`- ${SECRET}`, /entry 1 must be a mapping/],
    [`- {key: ${SECRET}, name: "has space"}`, /entry 1: name must be 1-64 letters/],
    [`- {key: ${SECRET}}`, /entry 1: name must be/],
    ["- {name: a}", /entry 1 \('a'\): key must be a non-empty string/],
    ['- {key: "two words", name: a}', /key must be a non-empty string without whitespace/],
    [`- {key: ${SECRET}, name: a, requests_per_minute: 0}`, /requests_per_minute must be an integer ≥ 1/],
    [`- {key: ${SECRET}, name: a, default_priority: 1.5}`, /default_priority must be an integer between/],
    [`- {key: ${SECRET}, name: a, priority_ceiling: high}`, /priority_ceiling must be an integer between/],
    [
      `- {key: ${SECRET}, name: a, default_priority: 0, priority_ceiling: 5}`,
      /default_priority 0 is more urgent than priority_ceiling 5/,
    ],
    [`- {key: ${SECRET}, name: a, tokens_per_minute: 1.5}`, /tokens_per_minute must be an integer ≥ 1/],
    [`- {key: ${SECRET}, name: a, max_concurrent: "4"}`, /max_concurrent must be an integer ≥ 1/],
    [`- {key: ${SECRET}, name: a, models: []}`, /models must be a non-empty list/],
    [`- {key: ${SECRET}, name: a, models: [1]}`, /models must be a non-empty list/],
    [`- {key: ${SECRET}, name: a}\n- {key: k2, name: a}`, /entry 2: the name 'a' is used twice/],
    [`- {key: ${SECRET}, name: a}\n- {key: ${SECRET}, name: b}`, /entry 2 \('b'\): the same key is given twice/],
    [`- {key: ${SECRET}, name: a\n`, /not valid YAML or JSON \(line \d+\)/],
    [`- key: ${SECRET}\n  key: ${SECRET}x\n  name: a`, /not valid YAML or JSON/],
  ];
  for (const [text, expected] of cases) {
    assert.throws(
      () => parseApiKeys(text, "k.yaml"),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, "CONFIG_INVALID");
        assert.match(error.message, expected, text);
        assert.ok(!error.message.includes(SECRET), `the message quotes the key: ${error.message}`);
        return true;
      },
    );
  }
});

test("flag keys are named api-key-1, api-key-2 and have no limits", () => {
  assert.deepEqual(apiKeysFromFlags(["k1", "k2"]), [
    { key: "k1", name: "api-key-1" },
    { key: "k2", name: "api-key-2" },
  ]);
  assert.throws(() => apiKeysFromFlags(["k1", ""]), /--api-key \(ARMATURE_API_KEY\) number 2 is empty/);
});

test("flag keys and file keys are checked together for clashes", () => {
  const file = parseApiKeys("- {key: f1, name: api-key-1}", "k.yaml");
  assert.throws(() => joinKeyLists(apiKeysFromFlags(["k1"]), file), /keys file entry 1: the name 'api-key-1' is used twice/);
  const other = parseApiKeys("- {key: k1, name: alice}", "k.yaml");
  assert.throws(
    () => joinKeyLists(apiKeysFromFlags(["k1"]), other),
    /keys file entry 1 \('alice'\): the same key is given twice/,
  );
  assert.deepEqual(
    joinKeyLists(apiKeysFromFlags(["k1"]), parseApiKeys("- {key: f1, name: alice}", "k.yaml")).map((s) => s.name),
    ["api-key-1", "alice"],
  );
});
