import { legendEntry, seriesColor, svgHeader } from "../charts/index.js";
/** One run's live workers over time: [seconds, workers] at each change. */
export interface WorkerSeries {
  readonly name: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
}

const LOAD_COLOR = "#999";
const W = 720;
const H = 420;
const M = { left: 64, right: 64, top: 40, bottom: 56 };
/** Arrivals are counted in bins of this many seconds for the load curve. */
const BIN_SECONDS = 30;

/**
 * An SVG of live workers against time (a step line per run, left axis) over the offered load
 * (requests arriving per second in 30 s bins, grey, right axis).
 */
export function renderPlannerChart(
  series: readonly WorkerSeries[],
  arrivalsMs: readonly number[],
  endSeconds: number,
  title: string,
): string {
  const bins = Array.from({ length: Math.max(1, Math.ceil(endSeconds / BIN_SECONDS)) }, () => 0);
  for (const at of arrivalsMs) {
    const bin = Math.min(bins.length - 1, Math.floor(at / 1000 / BIN_SECONDS));
    bins[bin] = (bins[bin] ?? 0) + 1;
  }
  const rates = bins.map((n) => n / BIN_SECONDS);
  const maxWorkers = Math.max(1, ...series.flatMap((s) => s.points.map(([, n]) => n)));
  const maxRate = Math.max(1e-9, ...rates);
  const px = (s: number): number => M.left + (Math.min(s, endSeconds) / Math.max(endSeconds, 1e-9)) * (W - M.left - M.right);
  const py = (share: number): number => H - M.bottom - share * (H - M.top - M.bottom);
  const parts: string[] = [...svgHeader(W, H, title)];
  for (let k = 0; k <= 4; k++) {
    const share = k / 4;
    parts.push(`<line x1="${M.left}" y1="${py(share)}" x2="${W - M.right}" y2="${py(share)}" stroke="#eee"/>`);
    parts.push(
      `<text x="${M.left - 6}" y="${py(share) + 4}" text-anchor="end">${(share * maxWorkers).toFixed(share * maxWorkers < 10 ? 1 : 0)}</text>`,
    );
    parts.push(`<text x="${W - M.right + 6}" y="${py(share) + 4}">${(share * maxRate).toFixed(2)}</text>`);
    const seconds = share * endSeconds;
    parts.push(`<text x="${px(seconds)}" y="${py(0) + 18}" text-anchor="middle">${seconds.toFixed(0)}</text>`);
  }
  parts.push(`<text x="${W / 2}" y="${H - 14}" text-anchor="middle">virtual time (s)</text>`);
  parts.push(`<text x="16" y="${H / 2}" transform="rotate(-90 16 ${H / 2})" text-anchor="middle">live workers</text>`);
  parts.push(
    `<text x="${W - 12}" y="${H / 2}" transform="rotate(90 ${W - 12} ${H / 2})" text-anchor="middle">arrivals per second</text>`,
  );
  const load = rates.map(
    (r, i) =>
      `${px(i * BIN_SECONDS).toFixed(1)},${py(r / maxRate).toFixed(1)} ${px((i + 1) * BIN_SECONDS).toFixed(1)},${py(r / maxRate).toFixed(1)}`,
  );
  parts.push(`<polyline fill="none" stroke="${LOAD_COLOR}" stroke-width="1.5" points="${load.join(" ")}"/>`);
  series.forEach((s, i) => {
    const points: string[] = [];
    let last: number | undefined;
    for (const [at, n] of s.points) {
      if (last !== undefined) points.push(`${px(at).toFixed(1)},${py(last / maxWorkers).toFixed(1)}`);
      points.push(`${px(at).toFixed(1)},${py(n / maxWorkers).toFixed(1)}`);
      last = n;
    }
    if (last !== undefined) points.push(`${px(endSeconds).toFixed(1)},${py(last / maxWorkers).toFixed(1)}`);
    const color = seriesColor(i);
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(" ")}"/>`);
    parts.push(...legendEntry(M.left, M.top, i, color, s.name));
  });
  const legend = series.length;
  parts.push(...legendEntry(M.left, M.top, legend, LOAD_COLOR, "arrivals per second (30 s bins)"));
  parts.push("</svg>");
  return parts.join("\n");
}
