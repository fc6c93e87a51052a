/** A frontend asks a router service which worker should serve a prompt. */
export interface RouteQuery {
  readonly type: "route-query";
  readonly model: string;
  /** The LoRA adapter the request runs with (its blocks hash with the adapter's seed). */
  readonly lora?: string | undefined;
  readonly tokenIds: readonly number[];
  /** The workers the frontend may use now (eligible, not busy, not excluded). */
  readonly candidates: readonly string[];
  readonly overrides?: { readonly overlapWeight?: number | undefined; readonly temperature?: number | undefined } | undefined;
}

/** The router service's choice. */
export interface RouteAnswer {
  readonly type: "route-answer";
  readonly workerId: string;
  /** Prompt blocks the chosen worker caches, when the policy knows. */
  readonly overlapBlocks: number | undefined;
}
