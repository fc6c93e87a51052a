import assert from "node:assert/strict";
import { test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { matchesGrammar } from "./grammar-matcher.js";
import { choiceAnswerGrammar, regexAnswerGrammar } from "./guided-grammars.js";
import { compileJsonSchema, SchemaRefusal } from "./json-schema-grammar.js";

// Each keyword: instances written by hand, judged by a real validator (ajv, draft 2020-12, with
// ajv-formats), fed through the compiled grammar without a model. The grammar may keep to a part
// of what a schema allows (compact whitespace, integers of 16 digits at most, …) but must never
// accept an instance the validator rejects.

const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);

/** `accepted` must be valid and in the grammar; `rejected` must be invalid and out of it. */
function check(schema: object, accepted: readonly string[], rejected: readonly string[]): void {
  const grammar = compileJsonSchema(schema);
  const validate = ajv.compile(schema);
  for (const text of accepted) {
    assert.ok(validate(JSON.parse(text)), `the validator rejects ${text}: ${JSON.stringify(validate.errors)}`);
    assert.ok(matchesGrammar(grammar, text), `the grammar of ${JSON.stringify(schema)} rejects ${text}`);
  }
  for (const text of rejected) {
    let valid = false;
    try {
      valid = validate(JSON.parse(text)) as boolean;
    } catch {}
    assert.equal(valid, false, `the validator accepts ${text}, so it cannot be a rejected example`);
    assert.equal(matchesGrammar(grammar, text), false, `the grammar of ${JSON.stringify(schema)} accepts ${text}`);
  }
}

test("integers: minimum and maximum exact through digit ranges, exclusive bounds, both signs", () => {
  check({ type: "integer", minimum: 1, maximum: 7 }, ["1", "4", "7"], ["0", "8", "36", "2100000", "-1", "1.5", "07"]);
  check({ type: "integer", minimum: -15, maximum: 120 }, ["-15", "-9", "0", "99", "100", "120"], ["-16", "121", "200"]);
  check({ type: "integer", exclusiveMinimum: 0, exclusiveMaximum: 100 }, ["1", "99"], ["0", "100"]);
  check({ type: "integer", minimum: 1000 }, ["1000", "123456789"], ["999", "-1000"]);
  check({ type: "integer", maximum: -3 }, ["-3", "-4000"], ["-2", "0", "5"]);
});

test("numbers: bounds hold for whole and fractional values; exclusive bounds never met", () => {
  check({ type: "number", minimum: 0, maximum: 1 }, ["0", "0.5", "0.25", "1"], ["1.5", "-0.5", "2"]);
  check({ type: "number", exclusiveMinimum: 0, maximum: 3 }, ["0.5", "2.75", "3"], ["0", "3.5", "-1"]);
  check({ type: "number", minimum: -2.5, maximum: 3 }, ["-2", "-1.5", "3"], ["-3", "3.01"]);
  check({ type: "number" }, ["0", "-12", "3.25"], ['"3"', "true"]);
});

test("strings: lengths, patterns (anchored or not), a pattern of one class with a length, formats", () => {
  check({ type: "string", minLength: 2, maxLength: 4 }, ['"ab"', '"abcd"', '"a\\nb"'], ['"a"', '"abcde"']);
  check({ type: "string", pattern: "^[a-z]+$", maxLength: 5 }, ['"ada"', '"abcde"'], ['"Ada"', '"abcdef"', '"Ada. "', '""']);
  check({ type: "string", pattern: "^(\\+1 )?\\d{3}-\\d{4}$" }, ['"555-1234"', '"+1 555-1234"'], ['"5551234"', '"555-12345"']);
  check({ type: "string", pattern: "[A-Z]{2}\\d" }, ['"AB1"'], ['"ab1"']);
  check({ type: "string", format: "date" }, ['"2024-02-28"', '"1999-12-01"'], ['"2024-13-01"', '"24-02-28"']);
  check({ type: "string", format: "date-time" }, ['"2024-02-28T23:59:59Z"'], ['"2024-02-28 23:59:59"']);
  check({ type: "string", format: "uuid" }, ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123e4567"']);
  check({ type: "string", format: "ipv4" }, ['"192.168.0.1"', '"255.255.255.255"'], ['"256.1.1.1"', '"1.2.3"']);
  check({ type: "string", format: "email" }, ['"ada@example.org"'], ['"ada.example.org"']);
});

test("objects: required and optional properties in order, additionalProperties, maps, nested", () => {
  const schema = {
    type: "object",
    properties: { n: { type: "integer", minimum: 1, maximum: 7 }, s: { type: "string" }, b: { type: "boolean" } },
    required: ["n"],
    additionalProperties: false,
  };
  check(
    schema,
    ['{"n": 3}', '{"n":3,"s":"x"}', '{"n": 3, "s": "x", "b": true}', '{"n":3,"b":false}'],
    ["{}", '{"n": 8}', '{"s": "x"}', '{"n": 3, "z": 1}'],
  );
  check(
    { type: "object", additionalProperties: { type: "integer", minimum: 0 } },
    ["{}", '{"a": 1, "b": 22}'],
    ['{"a": -1}', '{"a": "1"}'],
  );
  check(
    {
      type: "object",
      properties: { inner: { type: "object", properties: { x: { const: "y" } }, required: ["x"] } },
      required: ["inner"],
    },
    ['{"inner": {"x": "y"}}'],
    ['{"inner": {"x": "z"}}', '{"inner": {}}'],
  );
});

test("minProperties 1 where nothing is required, and a map's property bounds", () => {
  check(
    { type: "object", properties: { a: { type: "integer" }, b: { type: "string" } }, minProperties: 1 },
    ['{"a": 1}', '{"b": "x"}', '{"a": 1, "b": "x"}'],
    ["{}"],
  );
  check(
    { type: "object", additionalProperties: { type: "integer" }, minProperties: 1, maxProperties: 2 },
    ['{"a": 1}', '{"a": 1, "b": 2}'],
    ["{}", '{"a": 1, "b": 2, "c": 3}'],
  );
  assert.throws(
    () => compileJsonSchema({ type: "object", properties: { a: {}, b: {} }, minProperties: 2 }),
    (e: unknown) => e instanceof SchemaRefusal && e.keyword === "minProperties",
  );
});

test("arrays: items with minItems and maxItems, tuples, and nothing beyond a closed tuple", () => {
  check(
    { type: "array", items: { type: "integer", minimum: 0, maximum: 9 }, minItems: 1, maxItems: 3 },
    ["[1]", "[1, 2, 3]"],
    ["[]", "[1,2,3,4]", "[10]"],
  );
  check(
    { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false },
    ['["a", 1]'],
    ['["a", 1, 2]', '[1, "a"]'],
  );
  check({ type: "array", maxItems: 0 }, ["[]"], ["[1]"]);
});

test("enum, const, type lists, nullable, anyOf, disjoint oneOf, allOf, $ref with recursion", () => {
  check({ enum: ["red", 2, null, { a: 1 }] }, ['"red"', "2", "null", '{"a":1}'], ['"blue"', "3"]);
  check({ const: "fixed" }, ['"fixed"'], ['"other"']);
  check({ type: ["string", "null"], maxLength: 2 }, ['"ab"', "null"], ['"abc"', "1"]);
  check({ type: "integer", nullable: true, minimum: 0 }, ["0", "null"], ["-1"]);
  check(
    {
      anyOf: [
        { type: "integer", minimum: 5 },
        { type: "string", maxLength: 1 },
      ],
    },
    ["5", '"a"'],
    ["4", '"ab"'],
  );
  check({ oneOf: [{ type: "integer" }, { type: "string" }] }, ["1", '"a"'], ["true"]);
  // Keywords beside a union hold in each branch; a required constant property tells branches apart.
  check(
    {
      type: "object",
      required: ["kind"],
      oneOf: [
        { properties: { kind: { const: "circle" }, r: { type: "integer", minimum: 1 } }, required: ["kind", "r"] },
        { properties: { kind: { const: "square" }, side: { type: "integer", minimum: 1 } }, required: ["kind", "side"] },
      ],
    },
    ['{"kind": "circle", "r": 2}', '{"kind": "square", "side": 3}'],
    ['{"kind": "circle", "side": 3}', '{"kind": "circle", "r": 0}', '"circle"'],
  );
  check(
    {
      allOf: [
        { type: "object", properties: { a: { type: "integer" } }, required: ["a"] },
        { properties: { b: { type: "string" } }, required: ["b"] },
      ],
    },
    ['{"a": 1, "b": "x"}'],
    ['{"a": 1}'],
  );
  const tree = {
    $defs: {
      node: {
        type: "object",
        properties: { v: { type: "integer" }, kids: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 } },
        required: ["v"],
      },
    },
    $ref: "#/$defs/node",
  };
  check(
    tree,
    ['{"v": 1}', '{"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4}]}]}'],
    ['{"kids": []}', '{"v": 1, "kids": [{}]}'],
  );
  check(
    { definitions: { pos: { type: "integer", minimum: 1 } }, type: "array", items: { $ref: "#/definitions/pos" } },
    ["[1, 2]"],
    ["[0]"],
  );
});

test("annotations are read past; keywords the grammar cannot enforce are refused naming keyword and pointer", () => {
  check(
    {
      title: "T",
      description: "d",
      default: 1,
      examples: [1],
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "integer",
      minimum: 0,
      maximum: 1,
    },
    ["0"],
    ["2"],
  );
  const refusals: [object | boolean, string, string][] = [
    [{ type: "object", properties: { x: { not: { type: "string" } } } }, "not", "/properties/x/not"],
    [{ type: "string", pattern: "(?=a)b" }, "pattern", "/pattern"],
    [{ type: "string", pattern: "(a)\\1" }, "pattern", "/pattern"],
    [{ type: "string", format: "idn-email" }, "format", "/format"],
    [{ type: "array", items: { type: "integer" }, uniqueItems: true }, "uniqueItems", "/uniqueItems"],
    [{ type: "number", multipleOf: 0.5 }, "multipleOf", "/multipleOf"],
    [{ oneOf: [{ type: "integer" }, { type: "number" }] }, "oneOf", "/oneOf"],
    [JSON.parse(`{"if": {"type": "string"}, "then": {"maxLength": 2}}`), "if", "/if"],
    [{ type: "integer", minimum: 5, maximum: 4 }, "minimum", "/minimum"],
    [{ $ref: "https://example.com/schema.json" }, "$ref", "/$ref"],
    [{ properties: { a: { $ref: "#/$defs/missing" } } }, "$ref", "/properties/a/$ref"],
    [
      { type: "object", properties: { "a/b": { type: "object", dependentRequired: {} } } },
      "dependentRequired",
      "/properties/a~1b/dependentRequired",
    ],
    [false, "false", ""],
  ];
  for (const [schema, keyword, pointer] of refusals) {
    assert.throws(
      () => compileJsonSchema(schema),
      (e: unknown) => e instanceof SchemaRefusal && e.keyword === keyword && e.pointer === pointer,
      `${JSON.stringify(schema)} refused as ${keyword} at ${pointer}`,
    );
  }
});

test("vLLM's guided_regex and guided_choice: grammars over the whole answer, raw text", () => {
  const phone = regexAnswerGrammar("^\\d{3}-[a-z]{2,4}$");
  for (const text of ["555-ab", "123-abcd"]) assert.ok(matchesGrammar(phone, text), text);
  for (const text of ["555-a", "55-ab", "555-abcde", '"555-ab"']) assert.ok(!matchesGrammar(phone, text), text);
  // Raw text: a quote or a backslash is itself, not a JSON escape.
  const quoted = regexAnswerGrammar('say "hi"\\\\');
  assert.ok(matchesGrammar(quoted, 'say "hi"\\'));
  const choice = choiceAnswerGrammar(["yes", "no", "maybe so"]);
  for (const text of ["yes", "no", "maybe so"]) assert.ok(matchesGrammar(choice, text), text);
  for (const text of ["ye", "yes no", ""]) assert.ok(!matchesGrammar(choice, text), text);
});

test("a repetition llama.cpp would not write out is refused by name; a long upper bound is lowered, never a lower one", () => {
  // llama.cpp's grammar parser refuses a repetition of more than 2,000 copies: the frontend says so first.
  for (const [schema, keyword] of [
    [{ type: "string", minLength: 2001 }, "minLength"],
    [{ type: "array", items: { type: "integer" }, minItems: 100_000 }, "minItems"],
    [{ type: "string", pattern: "^a{3000,}$" }, "pattern"],
    // 2 × 1,000 × 1,000 copies: within each bound, beyond the grammar's size.
    [{ type: "string", pattern: "^((a{1000}){1000}){2}$" }, "$schema"],
  ] as const) {
    assert.throws(
      () => compileJsonSchema(schema),
      (e: unknown) => e instanceof SchemaRefusal && e.keyword === keyword,
      `${JSON.stringify(schema)} refused as ${keyword}`,
    );
  }
  assert.throws(() => regexAnswerGrammar("x{2001}"), /more than 2000 repetitions/);
  assert.throws(() => regexAnswerGrammar("((ab{250}){1000}){10}"), /parts, more than the 1000000 allowed/);
  // At the limit: still compiled. Above 256 an upper bound is lowered: fewer written, none invalid.
  check({ type: "string", minLength: 2000 }, [JSON.stringify("x".repeat(2000))], [JSON.stringify("x".repeat(1999))]);
  const long = regexAnswerGrammar("a{2,100000}");
  assert.ok(matchesGrammar(long, "a".repeat(256)));
  assert.ok(!matchesGrammar(long, "a".repeat(257)), "written out to 256 at most");
  assert.ok(!matchesGrammar(long, "a"));
});
