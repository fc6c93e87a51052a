import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { AccessMetrics } from "../../src/frontend/access/access-metrics.js";
import { FrontendMetrics } from "../../src/frontend/frontend-metrics.js";
import { KvbmMetrics } from "../../src/kvbm/index.js";
import { PrometheusMeter } from "../../src/observability/index.js";
import { PlannerMetrics } from "../../src/planner/index.js";
import { disaggregationMetrics, routerOverheadMetrics } from "../../src/router/index.js";
import { havePromtool, PROMTOOL } from "../helpers/promtool.js";

const BOARDS_DIR = fileURLToPath(new URL("../../deploy/grafana/", import.meta.url));
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JavaScript template
const DATASOURCE_UID = "${datasource}";

type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

interface Target {
  readonly refId?: string;
  readonly expr?: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
}

interface Panel {
  readonly id?: number;
  readonly type?: string;
  readonly title?: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
  readonly targets?: readonly Target[];
  readonly panels?: readonly Panel[];
}

interface Variable {
  readonly name?: string;
  readonly type?: string;
  readonly query?: string | { readonly query?: string };
  readonly definition?: string;
}

interface Dashboard {
  readonly title?: string;
  readonly uid?: string;
  readonly schemaVersion?: number;
  readonly panels?: readonly Panel[];
  readonly templating?: { readonly list?: readonly Variable[] };
}

/**
 * The metric families the code declares, by type, as prom-client renders them: every class or
 * factory that declares `armature_*` metrics, on one meter, read back from `# TYPE` lines.
 * `planner_traffic_reports_total` and `planner_traffic_requests_total` are declared inline in the
 * planner command's process start and cannot be built without a runtime, so they are not here
 * (and a board may not use them).
 */
async function exportedFamilies(): Promise<Map<string, MetricType>> {
  const meter = new PrometheusMeter();
  new FrontendMetrics(meter);
  new AccessMetrics(meter);
  KvbmMetrics.for(meter);
  PlannerMetrics.for(meter);
  routerOverheadMetrics(meter);
  disaggregationMetrics(meter);
  const families = new Map<string, MetricType>();
  for (const line of (await meter.render()).split("\n")) {
    const match = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (match) families.set(match[1]!, match[2] as MetricType);
  }
  return families;
}

/** The series names a scrape holds: a histogram's as `_bucket`, `_sum` and `_count`. */
function seriesNames(families: ReadonlyMap<string, MetricType>): Map<string, { family: string; type: MetricType }> {
  const series = new Map<string, { family: string; type: MetricType }>();
  for (const [family, type] of families) {
    if (type === "histogram") {
      for (const suffix of ["_bucket", "_sum", "_count"]) series.set(family + suffix, { family, type });
    } else {
      series.set(family, { family, type });
    }
  }
  return series;
}

/** Every panel, those nested in collapsed rows too. */
function allPanels(panels: readonly Panel[] = []): Panel[] {
  return panels.flatMap((panel) => [panel, ...allPanels(panel.panels)]);
}

function variableQuery(variable: Variable): string {
  return typeof variable.query === "string" ? variable.query : (variable.query?.query ?? variable.definition ?? "");
}

/** The PromQL of the board: each target's `expr` and each query variable's query. */
function expressions(board: Dashboard): { where: string; expr: string }[] {
  const found: { where: string; expr: string }[] = [];
  for (const panel of allPanels(board.panels)) {
    for (const target of panel.targets ?? []) {
      if (target.expr) found.push({ where: `panel "${panel.title}" ${target.refId}`, expr: target.expr });
    }
  }
  for (const variable of board.templating?.list ?? []) {
    if (variable.type === "query") found.push({ where: `variable ${variable.name}`, expr: variableQuery(variable) });
  }
  return found;
}

const METRIC_NAME = /\barmature_[A-Za-z0-9_:]*/g;

/** The `armature_*` names an expression uses that no exported series carries. */
function unknownNames(expr: string, series: ReadonlyMap<string, unknown>): string[] {
  return [...expr.matchAll(METRIC_NAME)].map((m) => m[0]).filter((name) => !series.has(name));
}

/** Names taken a `rate()`-like function of that are not cumulative (a gauge, or a histogram without its suffix). */
function ratesOfNonCounters(expr: string, series: ReadonlyMap<string, { type: MetricType }>): string[] {
  return [...expr.matchAll(/\b(?:rate|irate|increase)\s*\(\s*(armature_[A-Za-z0-9_:]*)/g)]
    .map((m) => m[1]!)
    .filter((name) => {
      const type = series.get(name)?.type;
      return type !== "counter" && type !== "histogram";
    });
}

/** Grafana's own variables replaced by values Prometheus parses, so promtool can read the expression. */
function withGrafanaVariablesFilled(expr: string): string {
  return expr
    .replaceAll("$__rate_interval", "5m")
    .replaceAll("$__interval", "1m")
    .replaceAll("$__range", "1h")
    .replace(/\$\{?model\}?/g, ".+");
}

function promtoolCheckRules(path: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(PROMTOOL, ["check", "rules", path], (error, stdout, stderr) => {
      resolve({ ok: !error, output: stdout + stderr });
    });
  });
}

async function loadBoards(): Promise<{ file: string; board: Dashboard }[]> {
  const files = (await readdir(BOARDS_DIR)).filter((f) => f.endsWith(".json")).sort();
  return Promise.all(
    files.map(async (file) => ({ file, board: JSON.parse(await readFile(join(BOARDS_DIR, file), "utf8")) as Dashboard })),
  );
}

describe("Grafana dashboards in deploy/grafana", async () => {
  const boards = await loadBoards();
  const series = seriesNames(await exportedFamilies());

  it("holds at least the overview board", () => {
    assert.ok(boards.some((b) => b.file === "armature-overview.json"));
  });

  it("the name check catches a name the code does not export and a rate of a gauge", () => {
    assert.deepEqual(unknownNames('sum(rate(armature_frontend_requests_total{model="m"}[5m]))', series), []);
    assert.deepEqual(unknownNames("armature_frontend_time_to_first_token_seconds", series), [
      "armature_frontend_time_to_first_token_seconds",
    ]);
    assert.deepEqual(unknownNames("rate(armature_frontend_requests[5m])", series), ["armature_frontend_requests"]);
    assert.deepEqual(ratesOfNonCounters("rate(armature_frontend_inflight_requests[5m])", series), [
      "armature_frontend_inflight_requests",
    ]);
  });

  for (const { file, board } of boards) {
    describe(file, () => {
      it("is a dashboard with a title, a uid and a current schema version", () => {
        assert.ok(board.title, "title");
        assert.ok(board.uid, "uid");
        assert.ok((board.schemaVersion ?? 0) >= 39, `schemaVersion ${board.schemaVersion}`);
      });

      it("takes its Prometheus from the datasource variable, on every panel and query", () => {
        const variable = board.templating?.list?.find((v) => v.name === "datasource");
        assert.equal(variable?.type, "datasource");
        assert.equal(variable?.query, "prometheus");
        for (const panel of allPanels(board.panels).filter((p) => p.type !== "row")) {
          assert.equal(panel.datasource?.uid, DATASOURCE_UID, `panel "${panel.title}"`);
          for (const target of panel.targets ?? []) {
            assert.equal(target.datasource?.uid, DATASOURCE_UID, `panel "${panel.title}" ${target.refId}`);
          }
        }
      });

      it("gives every panel a unique id, and every graph panel queries with distinct refIds", () => {
        const panels = allPanels(board.panels);
        assert.ok(panels.length > 0);
        const ids = panels.map((p) => p.id);
        assert.ok(
          ids.every((id) => Number.isInteger(id)),
          "every panel has an integer id",
        );
        assert.equal(new Set(ids).size, ids.length, "panel ids are unique");
        for (const panel of panels.filter((p) => p.type !== "row")) {
          const targets = panel.targets ?? [];
          assert.ok(targets.length > 0, `panel "${panel.title}" has targets`);
          assert.ok(
            targets.every((t) => t.expr),
            `panel "${panel.title}": every target has an expr`,
          );
          const refIds = targets.map((t) => t.refId);
          assert.equal(new Set(refIds).size, refIds.length, `panel "${panel.title}": refIds are unique`);
        }
      });

      it("uses only metric names the code exports, with their series suffixes", () => {
        const unknown = expressions(board).flatMap(({ where, expr }) =>
          unknownNames(expr, series).map((name) => `${where}: ${name}`),
        );
        assert.deepEqual(unknown, []);
      });

      it("takes rate() and increase() of counters and histogram series only", () => {
        const wrong = expressions(board).flatMap(({ where, expr }) =>
          ratesOfNonCounters(expr, series).map((name) => `${where}: ${name}`),
        );
        assert.deepEqual(wrong, []);
      });

      it("takes histogram_quantile() of _bucket series", () => {
        for (const { where, expr } of expressions(board)) {
          for (const quantile of expr.matchAll(/histogram_quantile\([^,]+,(.*)$/g)) {
            const names = [...quantile[1]!.matchAll(METRIC_NAME)].map((m) => m[0]);
            assert.ok(
              names.length > 0 && names.every((n) => n.endsWith("_bucket") && series.get(n)?.type === "histogram"),
              `${where}: ${expr}`,
            );
          }
        }
      });

      it("has PromQL that Prometheus parses (promtool check rules)", async (t) => {
        if (!havePromtool()) {
          t.skip("promtool is not installed (Debian's prometheus package)");
          return;
        }
        const targets = expressions(board).filter(({ where }) => !where.startsWith("variable "));
        // A rules file is YAML, and JSON is YAML: one recording rule per expression.
        const rules = {
          groups: [
            {
              name: "grafana-board-expressions",
              rules: targets.map(({ expr }, i) => ({ record: `board_expression_${i}`, expr: withGrafanaVariablesFilled(expr) })),
            },
          ],
        };
        const dir = await mkdtemp(join(tmpdir(), "armature-grafana-"));
        try {
          const path = join(dir, "rules.yml");
          await writeFile(path, JSON.stringify(rules));
          const result = await promtoolCheckRules(path);
          assert.ok(result.ok, result.output);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      });
    });
  }
});
