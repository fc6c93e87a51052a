import type { ChatDeltaShaper } from "./stream-types.js";
import type { ParsedToolCall } from "./types.js";

/** Calls compared by meaning: arguments parsed, as Dynamo's test normaliser compares them. */
export function canonical(calls: readonly ParsedToolCall[]): { name: string; arguments: unknown }[] {
  return calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown }));
}

/** Feeds `text` to `stream` in pieces of `size` characters and reassembles content and calls as a client does. */
export function reassemble(
  stream: ChatDeltaShaper,
  text: string,
  size: number,
): { content: string; calls: { id: string; name: string; arguments: unknown }[] } {
  let content = "";
  const calls: { id: string; name: string; arguments: string }[] = [];
  const take = (deltas: ReturnType<ChatDeltaShaper["push"]>): void => {
    for (const delta of deltas) {
      if (delta.type === "content") content += delta.text;
      else
        for (const chunk of delta.calls) {
          if (chunk.id !== undefined) {
            if (chunk.index !== calls.length) throw new Error(`call ${chunk.index} began out of order`);
            if (chunk.type !== "function" || chunk.function.arguments !== "")
              throw new Error("a first chunk holds id, type, name and empty arguments");
            calls.push({ id: chunk.id, name: chunk.function.name as string, arguments: "" });
          } else {
            const call = calls[chunk.index];
            if (!call) throw new Error(`arguments for call ${chunk.index} before its id`);
            call.arguments += chunk.function.arguments;
          }
        }
    }
  };
  for (let i = 0; i < text.length; i += size) take(stream.push(text.slice(i, i + size)));
  take(stream.finish());
  return { content, calls: calls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments) as unknown })) };
}
