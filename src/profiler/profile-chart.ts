import { escapeXml, legendEntry, seriesColor, svgHeader } from "../charts/index.js";
import type { ProfileDocument } from "./profile-document.js";

/** One line of a panel: its legend and its points, x ascending. */
interface ChartSeries {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

/** Where a panel sits in the SVG and what its axes say. */
interface Panel {
  readonly left: number;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly ChartSeries[];
}

// The size of the replay's TTFT chart (src/sim/ttft-chart.ts), two panels wide, so charts look alike.
const PANEL_WIDTH = 480;
const W = 2 * PANEL_WIDTH;
const H = 420;
const M = { left: 64, right: 24, top: 56, bottom: 56 };
/** Closest two x-axis labels may sit, in pixels, before the second is left out. */
const LABEL_SPACING = 30;

/**
 * An SVG of a worker profile: on the left TTFT against input length (one line), on the right ITL
 * against concurrency (one line per context length). X axes are logarithmic (the sweeps double), with
 * a tick at each measured value; Y axes are linear from 0. One `<polyline>` per line.
 */
export function renderProfileChart(profile: ProfileDocument, title: string): string {
  const contexts = [...new Set(profile.decode.map((p) => p.contextTokens))].sort((a, b) => a - b);
  const prefill: ChartSeries = {
    name: "TTFT",
    points: [...profile.prefill].sort((a, b) => a.inputTokens - b.inputTokens).map((p) => [p.inputTokens, p.ttftMs] as const),
  };
  const decode: ChartSeries[] = contexts.map((contextTokens) => ({
    name: `context ${contextTokens}`,
    points: profile.decode
      .filter((p) => p.contextTokens === contextTokens)
      .sort((a, b) => a.concurrency - b.concurrency)
      .map((p) => [p.concurrency, p.itlMs] as const),
  }));
  return [
    ...svgHeader(W, H, title),
    ...renderPanel({
      left: 0,
      title: "prefill",
      xLabel: "input length (tokens, log scale)",
      yLabel: "time to first token (ms)",
      series: [prefill],
    }),
    ...renderPanel({
      left: PANEL_WIDTH,
      title: "decode",
      xLabel: "concurrency (sequences, log scale)",
      yLabel: "inter-token latency (ms)",
      series: decode,
    }),
    "</svg>",
  ].join("\n");
}

function renderPanel(panel: Panel): string[] {
  const xs = [...new Set(panel.series.flatMap((s) => s.points.map(([x]) => x)))].sort((a, b) => a - b);
  const yMax = niceCeiling(Math.max(...panel.series.flatMap((s) => s.points.map(([, y]) => y))));
  const logLow = Math.log(xs[0]!);
  const logSpan = Math.log(xs.at(-1)!) - logLow;
  const plotLeft = panel.left + M.left;
  const plotRight = panel.left + PANEL_WIDTH - M.right;
  const px = (x: number): number =>
    logSpan === 0 ? (plotLeft + plotRight) / 2 : plotLeft + ((Math.log(x) - logLow) / logSpan) * (plotRight - plotLeft);
  const py = (y: number): number => H - M.bottom - (y / yMax) * (H - M.top - M.bottom);
  const f = (n: number): string => n.toFixed(1);
  const parts: string[] = [
    `<text x="${f((plotLeft + plotRight) / 2)}" y="${M.top - 14}" text-anchor="middle" font-size="13">${escapeXml(panel.title)}</text>`,
  ];
  let lastLabel = Number.NEGATIVE_INFINITY;
  for (const x of xs) {
    parts.push(`<line x1="${f(px(x))}" y1="${f(py(0))}" x2="${f(px(x))}" y2="${f(py(yMax))}" stroke="#ddd"/>`);
    if (px(x) - lastLabel < LABEL_SPACING) continue;
    lastLabel = px(x);
    parts.push(`<text x="${f(px(x))}" y="${f(py(0) + 18)}" text-anchor="middle">${x}</text>`);
  }
  for (let k = 0; k <= 5; k++) {
    const y = (yMax * k) / 5;
    parts.push(`<line x1="${f(plotLeft)}" y1="${f(py(y))}" x2="${f(plotRight)}" y2="${f(py(y))}" stroke="#eee"/>`);
    parts.push(`<text x="${f(plotLeft - 6)}" y="${f(py(y) + 4)}" text-anchor="end">${formatTick(y)}</text>`);
  }
  parts.push(`<line x1="${f(plotLeft)}" y1="${f(py(0))}" x2="${f(plotRight)}" y2="${f(py(0))}" stroke="#333"/>`);
  parts.push(`<line x1="${f(plotLeft)}" y1="${f(py(0))}" x2="${f(plotLeft)}" y2="${f(py(yMax))}" stroke="#333"/>`);
  const xMiddle = f((plotLeft + plotRight) / 2);
  parts.push(`<text x="${xMiddle}" y="${H - 14}" text-anchor="middle">${escapeXml(panel.xLabel)}</text>`);
  const yLabelX = panel.left + 16;
  parts.push(
    `<text x="${yLabelX}" y="${H / 2}" transform="rotate(-90 ${yLabelX} ${H / 2})" text-anchor="middle">${escapeXml(panel.yLabel)}</text>`,
  );
  panel.series.forEach((series, i) => {
    const color = seriesColor(i);
    const points = series.points.map(([x, y]) => `${f(px(x))},${f(py(y))}`);
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(" ")}"/>`);
    for (const [x, y] of series.points) parts.push(`<circle cx="${f(px(x))}" cy="${f(py(y))}" r="3" fill="${color}"/>`);
    parts.push(...legendEntry(plotLeft, M.top, i, color, series.name));
  });
  return parts;
}

/** The smallest 1, 2 or 5 × 10ⁿ at or above `value` (the top of a linear axis). */
function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 5, 10].find((m) => m * power >= value) ?? 10;
  return step * power;
}

function formatTick(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(3)));
}
