import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { generateRequest } from "../../../test/helpers/generate-request.js";
import { ArmatureError, type GenerateRequest } from "../../protocol/index.js";
import { completionBody } from "../llama-server/completion-body.js";
import { sglangGenerateBody } from "../sglang/sglang-generate-body.js";
import { trtllmCompletionBody } from "../trtllm/trtllm-completion-body.js";
import { vllmCompletionBody } from "../vllm/vllm-completion-body.js";

// docs/api.md's "By engine" table, its engine-server columns read back against the request bodies
// the workers send: a field marked honoured changes the body, one marked refused throws a refusal
// that names it.

const docs = readFileSync(new URL("../../../docs/api.md", import.meta.url), "utf8");
const section = docs.split("## By engine")[1]?.split("\n## ")[0] ?? "";
const header =
  /^\| field \|(.*)\|$/m
    .exec(section)?.[1]
    ?.split("|")
    .map((c) => c.trim()) ?? [];
const rows = [...section.matchAll(/^\| `([a-z_]+)` \|(.*)\|$/gm)].map((m) => ({
  field: m[1] as string,
  cells: new Map((m[2] as string).split("|").map((c, i) => [header[i] as string, c.trim()])),
}));

const bodies: Record<string, (request: GenerateRequest) => Record<string, unknown>> = {
  "llama-server": (request) => completionBody(request),
  vllm: (request) => vllmCompletionBody(request, { model: "m", version: "0.12.0", structuredOutputs: true }),
  sglang: (request) => sglangGenerateBody(request),
  trtllm: (request) => trtllmCompletionBody(request, { model: "m", adapter: () => undefined }),
};

/** A sampled, seeded request: what each row changes one field of. */
const base = generateRequest({ sampling: { temperature: 0.7, seed: 1 } });
const grammar = (param: string, extra: object) => ({ type: "grammar" as const, gbnf: 'root ::= "a"+', param, ...extra });
const withField: Record<string, Partial<GenerateRequest>> = {
  temperature: { sampling: { ...base.sampling, temperature: 0.5 } },
  top_p: { sampling: { ...base.sampling, topP: 0.9 } },
  top_k: { sampling: { ...base.sampling, topK: 20 } },
  min_p: { sampling: { ...base.sampling, minP: 0.1 } },
  seed: { sampling: { ...base.sampling, seed: 2 } },
  presence_penalty: { sampling: { ...base.sampling, presencePenalty: 0.5 } },
  frequency_penalty: { sampling: { ...base.sampling, frequencyPenalty: 0.25 } },
  repetition_penalty: { sampling: { ...base.sampling, repetitionPenalty: 1.2 } },
  logit_bias: { sampling: { ...base.sampling, logitBias: [{ token: 5, bias: 3 }] } },
  ignore_eos: { ignoreEos: true },
  min_tokens: { minTokens: 2 },
  stop_token_ids: { stopTokenIds: [9] },
  logprobs: { logprobs: { top: 2 } },
  response_format: { constraint: { type: "json_schema", schema: { type: "object" } } },
  guided_regex: { constraint: grammar("guided_regex", { regex: "a+" }) },
  guided_grammar: { constraint: grammar("guided_grammar", {}) },
};

test("the table lists every field this test can set, for every engine-server column", () => {
  assert.deepEqual(rows.map((r) => r.field).sort(), Object.keys(withField).sort());
  for (const engine of Object.keys(bodies)) assert.ok(header.includes(engine), `a ${engine} column`);
});

for (const [engine, body] of Object.entries(bodies)) {
  test(`${engine}: each field does what docs/api.md's table says`, () => {
    const reference = JSON.stringify(body(base));
    for (const { field, cells } of rows) {
      const request = { ...base, ...withField[field] };
      const said = cells.get(engine);
      if (said === "refused") {
        assert.throws(
          () => body(request),
          (error: unknown) => error instanceof ArmatureError && error.code === "NOT_SUPPORTED" && error.param === field,
          `${engine} refuses ${field} by name`,
        );
      } else {
        assert.equal(said, "honoured", `${engine} ${field}`);
        assert.notEqual(JSON.stringify(body(request)), reference, `${engine} sends ${field}`);
      }
    }
  });
}
