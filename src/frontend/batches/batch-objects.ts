/** OpenAI's File object, as `POST /v1/files` and `GET /v1/files/{id}` return it. */
export interface FileObject {
  readonly id: string;
  readonly object: "file";
  readonly bytes: number;
  readonly created_at: number;
  readonly filename: string;
  /** `batch` for uploads; `batch_output` for the output and error files armature writes. */
  readonly purpose: "batch" | "batch_output";
  readonly status: "processed";
  readonly expires_at: number | null;
  readonly status_details: null;
}

export type BatchStatus =
  | "validating"
  | "failed"
  | "in_progress"
  | "finalizing"
  | "completed"
  | "expired"
  | "cancelling"
  | "cancelled";

/** One entry of a batch's `errors.data`: a line of the input file that could not be run. */
export interface BatchLineError {
  readonly code: string;
  readonly message: string;
  readonly param: string | null;
  /** 1-based line of the input file. */
  readonly line: number | null;
}

/** OpenAI's Batch object. */
export interface BatchObject {
  readonly id: string;
  readonly object: "batch";
  readonly endpoint: string;
  readonly errors: { readonly object: "list"; readonly data: readonly BatchLineError[] } | null;
  readonly input_file_id: string;
  readonly completion_window: string;
  readonly status: BatchStatus;
  readonly output_file_id: string | null;
  readonly error_file_id: string | null;
  readonly created_at: number;
  readonly in_progress_at: number | null;
  readonly expires_at: number | null;
  readonly finalizing_at: number | null;
  readonly completed_at: number | null;
  readonly failed_at: number | null;
  readonly expired_at: number | null;
  readonly cancelling_at: number | null;
  readonly cancelled_at: number | null;
  readonly request_counts: { readonly total: number; readonly completed: number; readonly failed: number };
  readonly metadata: Readonly<Record<string, string>> | null;
}

/** A line of a batch's output or error file: the response a request got, or why it got none. */
export interface BatchResultLine {
  readonly id: string;
  readonly custom_id: string | null;
  readonly response: { readonly status_code: number; readonly request_id: string; readonly body: unknown } | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** The endpoints a batch may run, as OpenAI names them. */
export const BATCH_ENDPOINTS = ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"] as const;

/** How long a batch may take; OpenAI offers only this one. */
export const COMPLETION_WINDOW = "24h";
export const COMPLETION_WINDOW_SECONDS = 24 * 3600;
