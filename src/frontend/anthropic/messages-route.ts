import type { IncomingMessage, ServerResponse } from "node:http";
import { ArmatureError } from "../../protocol/index.js";
import type { AccessDenial } from "../access/index.js";
import type { Generation, GenerationEnd } from "../generation.js";
import { toHttpError } from "../http-errors.js";
import { lingerThenClose, readJsonBody, sendJson } from "../http-io.js";
import type { ModelPipeline } from "../model-pipelines.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import type { ChatMessage } from "../requests/chat-request.js";
import { type GenerationApi, type GenerationRouteDeps, type Reply, serveGeneration } from "../routes/generation-flow.js";
import { streamGeneration } from "../sse-stream.js";
import { SseWriter } from "../sse-writer.js";
import {
  answerWithToolCalls,
  planToolCalls,
  type ToolCallParserName,
  type ToolCallPlan,
  type ToolRequest,
  toolCallStream,
} from "../tool-calls/index.js";
import { anthropicError, anthropicErrorOf, anthropicFormat, type MessageIdentity } from "./anthropic-format.js";
import { AnthropicEventStream } from "./anthropic-stream.js";
import { type MessagesRequest, parseCountTokensRequest, parseMessagesRequest } from "./messages-request.js";

/** The paths of Anthropic's API, whose refusals (API keys included) take Anthropic's error shape. */
export const ANTHROPIC_PATHS: readonly string[] = ["/v1/messages", "/v1/messages/count_tokens"];

/** The messages' prompt tokens, exactly as a chat completion of them (and the tools) renders and tokenizes them. */
function promptTokens(
  messages: readonly ChatMessage[],
  tools: ToolRequest | undefined,
  pipeline: ModelPipeline,
): Promise<number[]> {
  refuseIfSurelyTooLong(
    messages.map((m) => m.content),
    pipeline,
    "messages",
  );
  return pipeline.tokenizeAsync(pipeline.renderChat(messages, { tools: tools?.tools }));
}

/** The Messages side of one request; the tool plan is decided once the model is known. */
function messagesApi(toolCallParser: ToolCallParserName | undefined): GenerationApi<MessagesRequest> {
  let plan: ToolCallPlan = { mode: "text" };
  return {
    endpoint: "messages",
    parse: parseMessagesRequest,
    prepare: async (request, pipeline) => {
      plan = planToolCalls(request.tools, pipeline.card, toolCallParser);
      if (plan.mode === "constrained" && request.params.constraint) {
        throw new ArmatureError(
          "REQUEST_INVALID",
          "'tool_choice' any or naming a tool cannot be combined with 'output_config.format'; send one",
          { param: "tool_choice" },
        );
      }
      const params = plan.mode === "constrained" ? { ...request.params, constraint: plan.constraint } : request.params;
      return { tokenIds: await promptTokens(request.messages, request.tools, pipeline), params };
    },
    respond: (request, generation, reply) => {
      const idn = { id: `msg_${reply.requestId.replaceAll("-", "")}`, model: request.params.model };
      return request.params.stream ? streamMessage(idn, plan, generation, reply) : wholeMessage(idn, plan, generation, reply);
    },
    errorBody: anthropicErrorOf,
    endStreamWithError: (res, http, requestId) => res.end(errorEvent(anthropicErrorOf(http, requestId))),
  };
}

/**
 * `POST /v1/messages` (Anthropic's Create a Message): the messages go through the model's chat
 * template and the same pipeline as a chat completion; the answer is Anthropic's `Message`, or
 * its stream of events.
 */
export function handleMessages(req: IncomingMessage, res: ServerResponse, requestId: string, deps: GenerationRouteDeps) {
  return serveGeneration(messagesApi(deps.toolCallParser), req, res, requestId, deps);
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
    sendJson(res, 200, { input_tokens: (await promptTokens(request.messages, request.tools, pipeline)).length }, headers);
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

async function wholeMessage(
  idn: MessageIdentity,
  plan: ToolCallPlan,
  generation: Generation,
  reply: Reply,
): Promise<GenerationEnd | undefined> {
  let text = "";
  for await (const event of generation.events) {
    if (event.type === "text") text += event.text;
    else {
      const { content, toolCalls } = answerWithToolCalls(plan, text);
      sendJson(reply.res, 200, anthropicFormat.message(idn, content, toolCalls, event), reply.headers);
      return event;
    }
  }
  return undefined;
}

/** Anthropic's event stream (`AnthropicEventStream`), each event as `event: <type>` + `data: <json>`. */
async function streamMessage(
  idn: MessageIdentity,
  plan: ToolCallPlan,
  generation: Generation,
  reply: Reply,
): Promise<GenerationEnd | undefined> {
  const events = new AnthropicEventStream(idn);
  const shaper = toolCallStream(plan);
  const pieces = (deltas: ReturnType<NonNullable<typeof shaper>["push"]>) =>
    deltas.flatMap((d) => (d.type === "content" ? events.text(d.text) : d.calls.flatMap((c) => events.call(c))));
  return streamGeneration(
    generation,
    new SseWriter(reply.res, reply.headers),
    {
      named: true,
      doneMarker: false,
      start: () => events.start(generation.promptTokens, shaper === undefined),
      text: (event) => (event.text === "" ? [] : shaper ? pieces(shaper.push(event.text)) : events.text(event.text)),
      end: (event) => [...(shaper ? pieces(shaper.finish()) : []), ...events.end(event)],
      error: (http) => [anthropicErrorOf(http, reply.requestId)],
    },
    reply.log,
  );
}

function errorEvent(body: { readonly type: string }): string {
  return `event: ${body.type}\ndata: ${JSON.stringify(body)}\n\n`;
}
