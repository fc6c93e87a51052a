import { escapeXml, seriesColor, svgHeader } from "./svg-parts.js";

/** One line of a chart: y values at the chart's x values. */
export interface LineSeries {
  readonly name: string;
  readonly y: readonly number[];
}

const W = 760;
const H = 440;
const M = { left: 64, right: 230, top: 40, bottom: 56 };

/** An SVG line chart with points, linear axes from zero, and a legend on the right. */
export function renderLineChart(
  title: string,
  x: readonly number[],
  series: readonly LineSeries[],
  labels: { x: string; y: string },
): string {
  const xMax = Math.max(...x);
  const yMax = Math.max(1e-9, ...series.flatMap((s) => s.y)) * 1.1;
  const px = (v: number): number => M.left + (v / xMax) * (W - M.left - M.right);
  const py = (v: number): number => H - M.bottom - (v / yMax) * (H - M.top - M.bottom);
  const parts = [
    ...svgHeader(W, H, title, (W - M.right + M.left) / 2),
    `<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="#333"/>`,
    `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}" stroke="#333"/>`,
    `<text x="${(W - M.right + M.left) / 2}" y="${H - 16}" text-anchor="middle">${escapeXml(labels.x)}</text>`,
    `<text x="16" y="${(H - M.bottom + M.top) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(H - M.bottom + M.top) / 2})">${escapeXml(labels.y)}</text>`,
  ];
  for (const v of x) {
    parts.push(`<text x="${px(v)}" y="${H - M.bottom + 18}" text-anchor="middle">${v}</text>`);
  }
  for (let i = 0; i <= 4; i++) {
    const v = (yMax / 4) * i;
    parts.push(`<line x1="${M.left}" y1="${py(v)}" x2="${W - M.right}" y2="${py(v)}" stroke="#eee"/>`);
    parts.push(`<text x="${M.left - 6}" y="${py(v) + 4}" text-anchor="end">${v.toFixed(v < 10 ? 2 : 0)}</text>`);
  }
  series.forEach((s, i) => {
    const color = seriesColor(i);
    const points = s.y.map((v, k) => `${px(x[k] as number)},${py(v)}`).join(" ");
    parts.push(`<polyline points="${points}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const [k, v] of s.y.entries()) parts.push(`<circle cx="${px(x[k] as number)}" cy="${py(v)}" r="3" fill="${color}"/>`);
    const ly = M.top + 10 + i * 20;
    parts.push(
      `<line x1="${W - M.right + 16}" y1="${ly}" x2="${W - M.right + 40}" y2="${ly}" stroke="${color}" stroke-width="2"/>`,
    );
    parts.push(`<text x="${W - M.right + 46}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
  });
  parts.push("</svg>");
  return parts.join("\n");
}
