import type OpenAI from "openai";

/** `GET /v1/models` as `[id, parent]` pairs (a LoRA adapter's parent is its model; a model's is null). */
export async function modelsWithParents(client: OpenAI): Promise<[string, string | null][]> {
  const models = (await client.models.list()).data as unknown as { id: string; parent: string | null }[];
  return models.map((m) => [m.id, m.parent]);
}

/** `POST /v1/load_lora_adapter` or `/v1/unload_lora_adapter` at `url`: the status and the text answered. */
export async function loraAdmin(url: string, route: "load" | "unload", body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/v1/${route}_lora_adapter`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}
