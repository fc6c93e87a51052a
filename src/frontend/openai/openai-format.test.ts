import assert from "node:assert/strict";
import { test } from "node:test";
import { chatFormat, completionFormat, textChunkSerializer } from "./openai-format.js";

test("the fast chunk serializer matches JSON.stringify of the chunk object", () => {
  const idn = { id: "chatcmpl-1", created: 5, model: 'm"odel' };
  for (const text of ["plain", 'quote " and \\ backslash', "line\nbreak \u0000 🦊"]) {
    assert.equal(
      textChunkSerializer("chat", idn, true)(text),
      JSON.stringify(chatFormat.chunk(idn, chatFormat.textDelta(text), null, true)),
    );
    assert.equal(textChunkSerializer("text", idn, false)(text), JSON.stringify(completionFormat.chunk(idn, text, null, false)));
  }
});
