export { type LineSeries, renderLineChart } from "./line-chart.js";
export { CHART_COLORS, escapeXml, legendEntry, seriesColor, svgHeader } from "./svg-parts.js";
