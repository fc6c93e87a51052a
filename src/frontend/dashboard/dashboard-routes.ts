import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { MetricMeter } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import { toHttpError } from "../http-errors.js";
import { sendJson } from "../http-io.js";
import { FLEET_METRIC_PREFIXES, type FleetSources, fleetSnapshot } from "./fleet-snapshot.js";
import { MeterHistory } from "./meter-history.js";
import { RequestWindow } from "./request-window.js";

/** The page and everything it loads; nothing comes from another origin. */
const PAGE_PATH = "/dashboard";
const ASSET_PREFIX = "/dashboard/";

interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
}

/** The page's own files, beside this module, and uPlot's from its package. */
function readAssets(): Map<string, Asset> {
  const own = (name: string): string => fileURLToPath(new URL(`./assets/${name}`, import.meta.url));
  const uplot = (name: string): string => createRequire(import.meta.url).resolve(`uplot/dist/${name}`);
  const files: [string, string, string][] = [
    [PAGE_PATH, own("index.html"), "text/html; charset=utf-8"],
    [ASSET_PREFIX, own("index.html"), "text/html; charset=utf-8"],
    [`${ASSET_PREFIX}dashboard.js`, own("dashboard.js"), "text/javascript; charset=utf-8"],
    [`${ASSET_PREFIX}dashboard.css`, own("dashboard.css"), "text/css; charset=utf-8"],
    [`${ASSET_PREFIX}uPlot.iife.min.js`, uplot("uPlot.iife.min.js"), "text/javascript; charset=utf-8"],
    [`${ASSET_PREFIX}uPlot.min.css`, uplot("uPlot.min.css"), "text/css; charset=utf-8"],
  ];
  return new Map(files.map(([path, file, contentType]) => [path, { body: readFileSync(file), contentType }]));
}

/** Scripts, styles and data from this origin only; uPlot sets element styles, hence the inline styles. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache",
};

/**
 * The live dashboard: `GET /dashboard` (a page, its script and style, uPlot) and `GET /v1/fleet`
 * (the JSON it polls). Its files are read once, when the frontend starts; its traffic window is fed
 * by the requests the frontend routes and finishes.
 */
export class Dashboard {
  readonly window: RequestWindow;
  readonly #history: MeterHistory;
  readonly #assets: Map<string, Asset>;

  constructor(meter: MetricMeter, window = new RequestWindow()) {
    this.window = window;
    this.#history = new MeterHistory({ meter, prefixes: FLEET_METRIC_PREFIXES });
    this.#assets = readAssets();
  }

  /** Whether `path` is one of the dashboard's files (`/dashboard`, `/dashboard/…`). */
  static servesPath(path: string): boolean {
    return path === PAGE_PATH || path.startsWith(ASSET_PREFIX);
  }

  /** Answers `GET` of a dashboard file; 404 for a name under `/dashboard/` that is none. */
  serveFile(res: ServerResponse, path: string, headers: Record<string, string>): void {
    const asset = this.#assets.get(path);
    if (!asset) {
      sendJson(res, 404, toHttpError(new ArmatureError("REQUEST_INVALID", `no route ${path}`)).body, headers);
      return;
    }
    res.writeHead(200, {
      ...headers,
      ...SECURITY_HEADERS,
      "content-type": asset.contentType,
      "content-length": asset.body.length,
    });
    res.end(asset.body);
  }

  /** Answers `GET /v1/fleet` (the models the caller's key may not use left out). */
  async serveFleet(
    res: ServerResponse,
    sources: Omit<FleetSources, "window" | "history">,
    headers: Record<string, string>,
    key?: { allowsModel(model: string): boolean },
  ): Promise<void> {
    const snapshot = await fleetSnapshot(
      { ...sources, window: this.window, history: this.#history },
      key ? (model) => key.allowsModel(model) : undefined,
    );
    sendJson(res, 200, snapshot, { ...headers, "cache-control": "no-store" });
  }
}
