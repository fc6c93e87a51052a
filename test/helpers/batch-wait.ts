import assert from "node:assert/strict";
import type OpenAI from "openai";
import type { Batch } from "openai/resources/batches";

/** Whether a batch has reached an end state. */
export const ended = (b: Batch): boolean => ["completed", "failed", "cancelled", "expired"].includes(b.status);

/** Reads the batch every 100 ms until `done` holds of it (two minutes at most). */
export async function waitForBatch(client: OpenAI, id: string, done: (b: Batch) => boolean): Promise<Batch> {
  for (let i = 0; i < 1200; i++) {
    const batch = await client.batches.retrieve(id);
    if (done(batch)) return batch;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`batch ${id} did not get there`);
}
