import assert from "node:assert/strict";

/** Token ids of lettered blocks: block "A" is `blockSize` distinct token ids, "B" the next ones, … */
export function letteredPrompt(letters: string, blockSize: number): number[] {
  return [...letters].flatMap((letter) =>
    Array.from({ length: blockSize }, (_, i) => 10 + (letter.charCodeAt(0) - 65) * blockSize + i),
  );
}

/**
 * A one-token completion of `prompt` (token ids), pinned to a worker when asked; returns which
 * worker served it and the overlap the router reported (`x-armature-overlap-blocks`).
 */
export async function routedCompletion(
  url: string,
  model: string,
  prompt: readonly number[],
  pinned?: string,
): Promise<{ worker: string; overlap: string }> {
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, prompt, max_tokens: 1, ...(pinned ? { nvext: { backend_instance_id: pinned } } : {}) }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.json();
  return { worker: res.headers.get("x-armature-worker") ?? "", overlap: res.headers.get("x-armature-overlap-blocks") ?? "" };
}
