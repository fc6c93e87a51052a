import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { cannotRank } from "../../protocol/index.js";
import { rankAll } from "../pooling-flow.js";
import { tokenizeEach } from "../prompt-bound.js";
import { parseRerankRequest, parseScoreRequest } from "../requests/ranking-request.js";
import { type PoolingContext, type PoolingRouteDeps, servePooled } from "./pooling-route.js";

/** Where the ranking routes answer (vLLM serves each at these paths). */
export const RANKING_PATHS: readonly string[] = ["/v1/rerank", "/v2/rerank", "/rerank", "/v1/score", "/score"];

/**
 * `POST /v1/rerank` (also `/rerank` and `/v2/rerank`; vLLM's, Jina's and Cohere's shape): every
 * document scored against the query by a ranking model, best first, cut to `top_n` when it is
 * above 0. Each result names the document's `index` in the request, its `relevance_score` and,
 * unless `return_documents` is false, its text.
 */
export function handleRerank(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: PoolingRouteDeps,
): Promise<void> {
  return servePooled("rerank", "scores", req, res, requestId, deps, parseRerankRequest, async (request, context) => {
    const result = await score([request.query], request.documents, requestId, request.model, deps, context);
    const ranked = result.scores
      .map((relevance_score, index) => ({ index, relevance_score }))
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
    const kept = request.topN > 0 ? ranked.slice(0, request.topN) : ranked;
    const body = {
      id: `rerank-${requestId}`,
      model: request.model,
      usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
      results: kept.map(({ index, relevance_score }) => ({
        index,
        ...(request.returnDocuments ? { document: { text: request.documents[index] } } : {}),
        relevance_score,
      })),
    };
    return { body, workerId: result.workerId, promptTokens: result.promptTokens };
  });
}

/**
 * `POST /v1/score` (also `/score`; vLLM's): the score of each `text_1`/`text_2` pair, in pair
 * order, as `data[i].score`.
 */
export function handleScore(req: IncomingMessage, res: ServerResponse, requestId: string, deps: PoolingRouteDeps): Promise<void> {
  return servePooled("score", "scores", req, res, requestId, deps, parseScoreRequest, async (request, context) => {
    const result = await score(request.queries, request.documents, requestId, request.model, deps, context);
    const body = {
      id: `score-${randomUUID()}`,
      object: "list",
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      data: result.scores.map((value, index) => ({ index, object: "score", score: value })),
      usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens, completion_tokens: 0 },
    };
    return { body, workerId: result.workerId, promptTokens: result.promptTokens };
  });
}

/** Tokenizes the texts as a completion's prompt is tokenized and scores every pair on one worker. */
async function score(
  queries: readonly string[],
  documents: readonly string[],
  requestId: string,
  model: string,
  deps: PoolingRouteDeps,
  context: PoolingContext,
): ReturnType<typeof rankAll> {
  if (!context.pipeline.card.kinds?.includes("rerank")) throw cannotRank(model, context.pipeline.card.engine);
  return rankAll(
    deps.router,
    {
      type: "rank-request",
      requestId,
      model,
      queries: await tokenizeEach(queries, context.pipeline, "query"),
      documents: await tokenizeEach(documents, context.pipeline, "documents"),
      timeoutMs: context.timeoutMs(),
    },
    { signal: context.signal, migrationLimit: deps.migrationLimit, onMigrate: context.onMigrate },
  );
}
