import { legendEntry, seriesColor, svgHeader } from "../charts/index.js";

/** One policy's TTFT samples, in milliseconds. */
export interface TtftSeries {
  readonly name: string;
  readonly ttftMs: readonly number[];
}

const W = 720;
const H = 420;
const M = { left: 64, right: 24, top: 40, bottom: 56 };

/**
 * An SVG of each series' TTFT distribution as an empirical CDF (share of requests whose first token
 * came within x ms) on a logarithmic x axis: curves further left and up are better.
 */
export function renderTtftChart(series: readonly TtftSeries[], title: string): string {
  const all = series.flatMap((s) => s.ttftMs).filter((v) => v > 0);
  const lo = Math.max(0.1, Math.min(...all));
  const hi = Math.max(lo * 10, Math.max(...all));
  const x0 = Math.floor(Math.log10(lo));
  const x1 = Math.ceil(Math.log10(hi));
  const px = (ms: number): number => M.left + ((Math.log10(Math.max(ms, 10 ** x0)) - x0) / (x1 - x0)) * (W - M.left - M.right);
  const py = (share: number): number => H - M.bottom - share * (H - M.top - M.bottom);
  const parts: string[] = [...svgHeader(W, H, title)];
  for (let e = x0; e <= x1; e++) {
    const x = px(10 ** e);
    parts.push(`<line x1="${x}" y1="${py(0)}" x2="${x}" y2="${py(1)}" stroke="#ddd"/>`);
    parts.push(`<text x="${x}" y="${py(0) + 18}" text-anchor="middle">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(-e)}</text>`);
  }
  for (const share of [0, 0.25, 0.5, 0.75, 0.9, 1]) {
    parts.push(`<line x1="${M.left}" y1="${py(share)}" x2="${W - M.right}" y2="${py(share)}" stroke="#eee"/>`);
    parts.push(`<text x="${M.left - 6}" y="${py(share) + 4}" text-anchor="end">${share}</text>`);
  }
  parts.push(`<text x="${W / 2}" y="${H - 14}" text-anchor="middle">time to first token (ms, log scale)</text>`);
  parts.push(`<text x="16" y="${H / 2}" transform="rotate(-90 16 ${H / 2})" text-anchor="middle">share of requests</text>`);
  series.forEach((s, i) => {
    const sorted = [...s.ttftMs].sort((a, b) => a - b);
    const step = Math.max(1, Math.floor(sorted.length / 400));
    const points: string[] = [];
    for (let k = 0; k < sorted.length; k += step)
      points.push(`${px(sorted[k] as number).toFixed(1)},${py((k + 1) / sorted.length).toFixed(1)}`);
    if (sorted.length > 0) points.push(`${px(sorted.at(-1) as number).toFixed(1)},${py(1).toFixed(1)}`);
    const color = seriesColor(i);
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(" ")}"/>`);
    parts.push(...legendEntry(M.left, M.top, i, color, s.name));
  });
  parts.push("</svg>");
  return parts.join("\n");
}
