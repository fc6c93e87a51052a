import type { IncomingMessage, ServerResponse } from "node:http";
import type { AccessDenial } from "../access/index.js";
import { anthropicError, anthropicErrorOf, anthropicFormat, type MessageIdentity } from "../anthropic-format.js";
import type { Generation, GenerationEnd } from "../generation.js";
import { toHttpError } from "../http-errors.js";
import { lingerThenClose, readJsonBody, sendJson } from "../http-io.js";
import type { ModelPipeline } from "../model-pipelines.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import type { ChatMessage } from "../requests/chat-request.js";
import { type MessagesRequest, parseCountTokensRequest, parseMessagesRequest } from "../requests/messages-request.js";
import { SseWriter } from "../sse-writer.js";
import { type GenerationApi, type GenerationRouteDeps, type Reply, serveGeneration } from "./generation-flow.js";

/** The paths of Anthropic's API, whose refusals (API keys included) take Anthropic's error shape. */
export const ANTHROPIC_PATHS: readonly string[] = ["/v1/messages", "/v1/messages/count_tokens"];

/** The messages' prompt tokens, exactly as a chat completion of them renders and tokenizes them. */
function promptTokens(messages: readonly ChatMessage[], pipeline: ModelPipeline): number[] {
  refuseIfSurelyTooLong(
    messages.map((m) => m.content),
    pipeline,
    "messages",
  );
  return pipeline.tokenize(pipeline.renderChat(messages));
}

const messagesApi: GenerationApi<MessagesRequest> = {
  endpoint: "messages",
  parse: parseMessagesRequest,
  prepare: (request, pipeline) => ({ tokenIds: promptTokens(request.messages, pipeline), params: request.params }),
  respond: (request, generation, reply) => {
    const idn = { id: `msg_${reply.requestId.replaceAll("-", "")}`, model: request.params.model };
    return request.params.stream ? streamMessage(idn, generation, reply) : wholeMessage(idn, generation, reply);
  },
  errorBody: anthropicErrorOf,
  endStreamWithError: (res, http, requestId) => res.end(errorEvent(anthropicErrorOf(http, requestId))),
};

/**
 * `POST /v1/messages` (Anthropic's Create a Message): the messages go through the model's chat
 * template and the same pipeline as a chat completion; the answer is Anthropic's `Message`, or
 * its stream of events.
 */
export function handleMessages(req: IncomingMessage, res: ServerResponse, requestId: string, deps: GenerationRouteDeps) {
  return serveGeneration(messagesApi, req, res, requestId, deps);
}

/**
 * `POST /v1/messages/count_tokens` (Anthropic's Count tokens): `{input_tokens}`, the prompt tokens
 * a `POST /v1/messages` of the same messages and system prompt uses. No worker is involved and
 * no quota is spent.
 */
export async function handleCountTokens(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: GenerationRouteDeps,
): Promise<void> {
  const headers = { "x-request-id": requestId };
  try {
    const request = parseCountTokensRequest(await readJsonBody(req, deps.bodyLimitBytes));
    deps.access?.checkModel(request.model);
    const pipeline = await deps.pipelines.get(request.model);
    sendJson(res, 200, { input_tokens: promptTokens(request.messages, pipeline).length }, headers);
  } catch (error) {
    const http = toHttpError(error);
    if (http.status >= 500) deps.logger.error({ err: error, requestId }, "count_tokens failed");
    if (res.headersSent || res.destroyed) return;
    sendJson(res, http.status, anthropicErrorOf(http, requestId), headers);
    if (http.status === 413) lingerThenClose(req);
  }
}

/** An API-key refusal (401, 429) on an Anthropic path, in Anthropic's error shape. */
export function sendAnthropicDenial(
  req: IncomingMessage,
  res: ServerResponse,
  denial: AccessDenial,
  headers: Record<string, string>,
): void {
  req.resume();
  const body = anthropicError(denial.status, denial.body.error.message, headers["x-request-id"] ?? null);
  sendJson(res, denial.status, body, { ...headers, ...denial.headers });
}

async function wholeMessage(idn: MessageIdentity, generation: Generation, reply: Reply): Promise<GenerationEnd | undefined> {
  let text = "";
  for await (const event of generation.events) {
    if (event.type === "text") text += event.text;
    else {
      sendJson(reply.res, 200, anthropicFormat.message(idn, text, event), reply.headers);
      return event;
    }
  }
  return undefined;
}

/** The event sequence Anthropic documents for a text answer, each as `event: <type>` + `data: <json>`. */
async function streamMessage(idn: MessageIdentity, generation: Generation, reply: Reply): Promise<GenerationEnd | undefined> {
  const sse = new SseWriter(reply.res, reply.headers);
  const send = (event: { readonly type: string }): Promise<void> => sse.sendEvent(event.type, event);
  try {
    await send(anthropicFormat.messageStart(idn, generation.promptTokens));
    await send(anthropicFormat.textBlockStart);
    await send(anthropicFormat.ping);
    for await (const event of generation.events) {
      if (sse.closed) return undefined;
      if (event.type === "text") {
        if (event.text !== "") await send(anthropicFormat.textDelta(event.text));
        continue;
      }
      sse.cork(); // the closing events go out together; end() uncorks
      await send(anthropicFormat.textBlockStop);
      await send(anthropicFormat.messageDelta(event));
      await send(anthropicFormat.messageStop);
      sse.end();
      return event;
    }
    return undefined;
  } catch (error) {
    if (sse.closed) return undefined;
    reply.log.error({ err: error }, "stream failed after it started");
    await send(anthropicErrorOf(toHttpError(error), reply.requestId));
    sse.end();
    return undefined;
  }
}

function errorEvent(body: { readonly type: string }): string {
  return `event: ${body.type}\ndata: ${JSON.stringify(body)}\n\n`;
}
