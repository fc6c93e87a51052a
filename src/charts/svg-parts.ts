/** The palette every chart draws its series in, in order. */
export const CHART_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"] as const;

/** The colour of the `index`-th series. */
export function seriesColor(index: number): string {
  return CHART_COLORS[index % CHART_COLORS.length] as string;
}

/** Text made safe for SVG element content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** The opening of every chart: the `<svg>` element, a white background and the title centred on `titleX`. */
export function svgHeader(width: number, height: number, title: string, titleX = width / 2): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${titleX}" y="22" text-anchor="middle" font-size="14">${escapeXml(title)}</text>`,
  ];
}

/** One legend line inside the plot, under the previous ones: a colour swatch and the series name. */
export function legendEntry(left: number, top: number, index: number, color: string, name: string): string[] {
  return [
    `<rect x="${left + 12}" y="${top + 8 + index * 18}" width="14" height="4" fill="${color}"/>`,
    `<text x="${left + 32}" y="${top + 14 + index * 18}">${escapeXml(name)}</text>`,
  ];
}
