import { setMaxListeners } from "node:events";
import type { Logger } from "../../observability/index.js";
import { type BatchEntry, MAX_BATCH_REQUESTS, readBatchInput } from "./batch-input.js";
import type { BatchObject, BatchResultLine, BatchStatus } from "./batch-objects.js";
import type { BatchStore, ResultKind, StoredBatch } from "./batch-store.js";

/** What one request of a batch got: the HTTP status, request id and JSON body of its response. */
export interface BatchCall {
  readonly status: number;
  readonly requestId: string;
  readonly body: unknown;
}

/**
 * Runs one request of a batch through the frontend's own route for `endpoint`, as API key `owner`
 * (null without keys), at the lowest priority. Rejects only when no response came (the request
 * was cut off: `signal`, or the server going away).
 */
export type BatchSend = (
  endpoint: string,
  body: Record<string, unknown>,
  owner: string | null,
  requestId: string,
  signal: AbortSignal,
) => Promise<BatchCall>;

export interface BatchRunnerOptions {
  readonly store: BatchStore;
  readonly send: BatchSend;
  /** Requests of all batches in flight at once. */
  readonly concurrency: number;
  readonly logger: Logger;
  /** Seconds since the epoch. Default: the wall clock. */
  readonly now?: () => number;
}

/** Statuses a batch is still moving through: a new process picks such batches up where they stopped. */
const UNFINISHED: ReadonlySet<BatchStatus> = new Set(["validating", "in_progress", "finalizing", "cancelling"]);
const CANCELLABLE: ReadonlySet<BatchStatus> = new Set(["validating", "in_progress", "finalizing"]);
/** How often a running batch's counts are saved (its results are appended as they come). */
const SAVE_EVERY_MS = 250;
/** How often the runner looks for batches created or cancelled by other frontend processes. */
const POLL_MS = 1000;

/**
 * Runs batches: validates the input file, sends each request through the frontend's route
 * (`send`), appends each result to the output or error results as it comes, and turns them into
 * files when the batch ends. State lives in the store, so a batch whose process was killed resumes
 * where it stopped in the next one: requests with a result line are not sent again, the others are.
 */
export class BatchRunner {
  readonly #o: BatchRunnerOptions;
  readonly #running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  readonly #log: Logger;
  /** Free request slots, shared by every batch; waiters take them in order. */
  #slots: number;
  readonly #slotWaiters: (() => void)[] = [];
  #closed = false;
  #holdsLock = false;
  #poller: NodeJS.Timeout | undefined;

  constructor(options: BatchRunnerOptions) {
    this.#o = options;
    this.#slots = options.concurrency;
    this.#log = options.logger.child({ component: "batches" });
  }

  /**
   * Becomes the directory's runner unless another live frontend process is (`runner.lock`), then
   * starts every batch a previous process left unfinished and keeps looking for batches other
   * processes create or cancel.
   */
  async start(): Promise<void> {
    this.#holdsLock = await this.#o.store.acquireRunnerLock();
    if (!this.#holdsLock) {
      this.#log.info("another frontend process runs this --batch-dir's batches; this one stores and serves them");
      return;
    }
    await this.#scan(true);
    this.#poller = setInterval(() => {
      this.#scan(false).catch((error: unknown) => this.#log.warn({ err: error }, "could not read the batch directory"));
    }, POLL_MS);
    this.#poller.unref();
  }

  async #scan(announce: boolean): Promise<void> {
    for (const { batch } of await this.#o.store.listBatches()) {
      const running = this.#running.get(batch.id);
      // Cancelled through another process: stop it here; the next scan finishes it.
      if (batch.status === "cancelling" && running) running.controller.abort(new Error("batch cancelled"));
      else if (UNFINISHED.has(batch.status) && !running) {
        if (announce) this.#log.info({ batchId: batch.id, status: batch.status }, "resuming a batch");
        this.run(batch.id);
      }
    }
  }

  /** Starts running a stored batch, unless it runs already (or another process runs this directory's batches). */
  run(id: string): void {
    if (this.#closed || !this.#holdsLock || this.#running.has(id)) return;
    const controller = new AbortController();
    // Every request in flight and every wait for a slot listens to it.
    setMaxListeners(2 * this.#o.concurrency + 10, controller.signal);
    const done = this.#drive(id, controller.signal)
      .catch((error: unknown) =>
        this.#log.error({ err: error, batchId: id }, "batch runner failed; it resumes at the next start"),
      )
      .finally(() => this.#running.delete(id));
    this.#running.set(id, { controller, done });
  }

  /** Cancels a batch: no new request starts, those in flight are cut off, the results so far become its files. */
  async cancel(id: string): Promise<StoredBatch | undefined> {
    const before = await this.#o.store.batch(id);
    if (!before || !CANCELLABLE.has(before.batch.status)) return before;
    const running = this.#running.get(id);
    running?.controller.abort(new Error("batch cancelled"));
    await running?.done;
    // Read again: the runner saved its counts as it stopped.
    const stopped = (await this.#o.store.batch(id)) ?? before;
    if (!CANCELLABLE.has(stopped.batch.status)) return stopped;
    const cancelling: StoredBatch = { ...stopped, batch: { ...stopped.batch, status: "cancelling", cancelling_at: this.#now() } };
    await this.#o.store.saveBatch(cancelling);
    this.run(id);
    return cancelling;
  }

  /** Stops: requests in flight are cut off and their batches left to resume at the next start. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#poller);
    for (const { controller } of this.#running.values()) controller.abort(new Error("server stopping"));
    await Promise.all([...this.#running.values()].map((r) => r.done));
    if (this.#holdsLock) await this.#o.store.releaseRunnerLock();
  }

  async #drive(id: string, signal: AbortSignal): Promise<void> {
    let stored = await this.#o.store.batch(id);
    if (!stored) return;
    // The input file is read once per run: validation's reading serves the requests too.
    const runs = stored.batch.status === "validating" || stored.batch.status === "in_progress";
    const input = runs ? await this.#readInput(stored.batch) : undefined;
    if (stored.batch.status === "validating") stored = await this.#validate(stored, input);
    if (stored.batch.status === "in_progress") stored = await this.#process(stored, input?.entries ?? [], signal);
    if (signal.aborted) return; // closing, or cancelled: `cancel` finishes it
    if (stored.batch.status === "finalizing" || stored.batch.status === "cancelling") await this.#finish(stored);
  }

  /** Reads the input file: lines that cannot run get their error results now; the batch goes in progress or fails. */
  /** The batch's input file read into requests and rejected lines; undefined when the file is gone. */
  async #readInput(batch: BatchObject): Promise<ReturnType<typeof readBatchInput> | undefined> {
    const file = await this.#o.store.file(batch.input_file_id);
    if (!file) return undefined;
    return readBatchInput((await this.#o.store.fileContent(file.file.id)).toString("utf8"), batch.endpoint);
  }

  async #validate(stored: StoredBatch, input: ReturnType<typeof readBatchInput> | undefined): Promise<StoredBatch> {
    const { batch } = stored;
    await this.#o.store.clearResults(batch.id);
    const fail = async (code: string, message: string, param: string | null): Promise<StoredBatch> => {
      const failed: StoredBatch = {
        ...stored,
        batch: {
          ...batch,
          status: "failed",
          failed_at: this.#now(),
          errors: { object: "list", data: [{ code, message, param, line: null }] },
        },
      };
      await this.#o.store.saveBatch(failed);
      this.#log.warn({ batchId: batch.id, code, message }, "batch failed validation");
      return failed;
    };
    if (!input) return fail("invalid_file", `the input file ${batch.input_file_id} no longer exists`, "input_file_id");
    const { entries, rejected } = input;
    const total = entries.length + rejected.length;
    if (total === 0) return fail("empty_file", "the input file holds no requests", "input_file_id");
    if (total > MAX_BATCH_REQUESTS) {
      return fail(
        "too_many_requests",
        `the input file holds ${total} requests; a batch takes at most ${MAX_BATCH_REQUESTS}`,
        "input_file_id",
      );
    }
    if (rejected.length > 0) {
      const lines = rejected.map((r) =>
        resultLine({
          id: resultId(batch.id, r.line),
          custom_id: r.customId,
          response: null,
          error: { code: r.code, message: r.message },
        }),
      );
      await this.#o.store.appendResults(batch.id, "errors", lines.join(""));
    }
    const next: StoredBatch = {
      ...stored,
      batch: {
        ...batch,
        status: "in_progress",
        in_progress_at: this.#now(),
        errors:
          rejected.length > 0
            ? {
                object: "list",
                data: rejected.map(({ code, message, param, line }) => ({ code, message, param, line })),
              }
            : null,
        request_counts: { total, completed: 0, failed: rejected.length },
      },
    };
    await this.#o.store.saveBatch(next);
    return next;
  }

  /** Sends every request without a result yet, `concurrency` at a time across batches. */
  async #process(start: StoredBatch, entries: readonly BatchEntry[], signal: AbortSignal): Promise<StoredBatch> {
    const { batch, owner } = start;
    const output = await this.#o.store.results(batch.id, "output");
    const errors = await this.#o.store.results(batch.id, "errors");
    const done = new Set([...output, ...errors].map((line) => (JSON.parse(line) as { id: string }).id));
    let completed = output.length;
    let failed = errors.length;
    let current = start;
    let saving = Promise.resolve();
    let savedAt = 0;
    // Only the counts are written: a cancel from another process may have changed the status meanwhile.
    const save = (force: boolean): Promise<void> => {
      if (!force && Date.now() - savedAt < SAVE_EVERY_MS) return saving;
      savedAt = Date.now();
      current = {
        ...current,
        batch: { ...current.batch, request_counts: { ...current.batch.request_counts, completed, failed } },
      };
      const counts = current.batch.request_counts;
      saving = saving.then(async () => {
        const latest = (await this.#o.store.batch(batch.id)) ?? current;
        await this.#o.store.saveBatch({ ...latest, batch: { ...latest.batch, request_counts: counts } });
      });
      return saving;
    };
    const pending = entries.filter((e) => !done.has(resultId(batch.id, e.line)));
    const expiresAt = batch.expires_at ?? Number.POSITIVE_INFINITY;
    let next = 0;
    let expired = false;
    const append = async (kind: ResultKind, line: BatchResultLine): Promise<void> => {
      await this.#o.store.appendResults(batch.id, kind, resultLine(line));
      if (kind === "output") completed++;
      else failed++;
      await save(false);
    };
    const work = async (): Promise<void> => {
      for (;;) {
        if (signal.aborted || next >= pending.length) return;
        if (this.#now() >= expiresAt) {
          expired = true;
          return;
        }
        if (!(await this.#takeSlot(signal))) return;
        if (signal.aborted) {
          this.#releaseSlot();
          return;
        }
        const entry = pending[next++] as BatchEntry;
        try {
          await this.#runEntry(batch, owner, entry, signal, append);
        } finally {
          this.#releaseSlot();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#o.concurrency, pending.length) }, work));
    if (expired) {
      // What never ran gets its error line, as OpenAI writes them for an expired batch.
      const left = pending.slice(next).map((e) =>
        resultLine({
          id: resultId(batch.id, e.line),
          custom_id: e.customId,
          response: null,
          error: { code: "batch_expired", message: "this request was not run before the batch expired" },
        }),
      );
      if (left.length > 0) await this.#o.store.appendResults(batch.id, "errors", left.join(""));
      failed += left.length;
    }
    await save(true);
    if (signal.aborted) return current;
    const latest = (await this.#o.store.batch(batch.id)) ?? current;
    if (latest.batch.status !== "in_progress") return latest; // cancelled meanwhile
    current = {
      ...latest,
      batch: {
        ...current.batch,
        status: "finalizing",
        finalizing_at: this.#now(),
        ...(expired ? { expired_at: this.#now() } : {}),
      },
    };
    await this.#o.store.saveBatch(current);
    return current;
  }

  async #runEntry(
    batch: BatchObject,
    owner: string | null,
    entry: BatchEntry,
    signal: AbortSignal,
    append: (kind: ResultKind, line: BatchResultLine) => Promise<void>,
  ): Promise<void> {
    const id = resultId(batch.id, entry.line);
    let call: BatchCall;
    try {
      call = await this.#o.send(batch.endpoint, entry.body, owner, id, signal);
    } catch (error) {
      if (signal.aborted) return; // cut off: it runs again when the batch resumes
      await append("errors", {
        id,
        custom_id: entry.customId,
        response: null,
        error: { code: "request_failed", message: (error as Error).message },
      });
      return;
    }
    const response = { status_code: call.status, request_id: call.requestId, body: call.body };
    await append(call.status >= 200 && call.status < 300 ? "output" : "errors", {
      id,
      custom_id: entry.customId,
      response,
      error: null,
    });
  }

  /** The batch ends: its results become files, and it is completed (or cancelled, or expired). */
  async #finish(stored: StoredBatch): Promise<void> {
    const { batch, owner } = stored;
    const output = await this.#o.store.promoteResults(batch.id, "output", owner);
    const errors = await this.#o.store.promoteResults(batch.id, "errors", owner);
    const now = this.#now();
    const status: BatchStatus = batch.status === "cancelling" ? "cancelled" : batch.expired_at !== null ? "expired" : "completed";
    const ended: StoredBatch = {
      ...stored,
      batch: {
        ...batch,
        status,
        output_file_id: output?.id ?? batch.output_file_id,
        error_file_id: errors?.id ?? batch.error_file_id,
        ...(status === "completed" ? { completed_at: now } : status === "cancelled" ? { cancelled_at: now } : {}),
      },
    };
    await this.#o.store.saveBatch(ended);
    const counts = ended.batch.request_counts;
    this.#log.info({ batchId: batch.id, status, ...counts }, "batch ended");
  }

  /** Takes a request slot, waiting for one; false when `signal` aborted the wait (no slot taken). */
  async #takeSlot(signal: AbortSignal): Promise<boolean> {
    if (this.#slots > 0) {
      this.#slots--;
      return true;
    }
    return new Promise<boolean>((resolve) => {
      const onAbort = (): void => {
        const at = this.#slotWaiters.indexOf(wake);
        if (at >= 0) this.#slotWaiters.splice(at, 1);
        resolve(false);
      };
      const wake = (): void => {
        signal.removeEventListener("abort", onAbort);
        this.#slots--;
        resolve(true);
      };
      if (signal.aborted) return resolve(false);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#slotWaiters.push(wake);
    });
  }

  #releaseSlot(): void {
    this.#slots++;
    this.#slotWaiters.shift()?.();
  }

  #now(): number {
    return this.#o.now?.() ?? Math.floor(Date.now() / 1000);
  }
}

/** The id of the result line of input line `line`: the same every time, so a resumed batch knows what ran. */
function resultId(batchId: string, line: number): string {
  return `batch_req_${batchId.slice("batch_".length)}_${line}`;
}

function resultLine(line: BatchResultLine): string {
  return `${JSON.stringify(line)}\n`;
}
