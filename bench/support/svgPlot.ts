/**
 * A small line plot written as SVG text, so that the bench can draw its
 * scaling curves into docs/ without a plotting dependency. Axes are
 * logarithmic or linear; every series is a polyline with its points marked.
 */

/** One curve. */
export interface Series {
  /** Legend text. */
  readonly label: string;
  /** Points in data units, x ascending. */
  readonly points: readonly (readonly [number, number])[];
}

/** What to draw. */
export interface Plot {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xLog?: boolean;
  readonly yLog?: boolean;
  readonly series: readonly Series[];
}

const WIDTH = 640;
const HEIGHT = 400;
const MARGIN = { left: 70, right: 20, top: 40, bottom: 90 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceNumber(value: number): string {
  if (value >= 1000) return value.toLocaleString('en-US', { maximumFractionDigits: 0 });
  if (value >= 10) return value.toFixed(0);
  if (value >= 1) return value.toFixed(1).replace(/\.0$/, '');
  return value.toPrecision(2);
}

/** Tick values: powers of ten across a log range, or about five round steps across a linear one. */
function ticks(min: number, max: number, log: boolean): number[] {
  if (log) {
    const out: number[] = [];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) out.push(10 ** e);
    return out;
  }
  const step = 10 ** Math.floor(Math.log10((max - min) / 5 || 1));
  const stride = [1, 2, 5, 10].map((m) => m * step).find((s) => (max - min) / s <= 6) ?? step * 10;
  const out: number[] = [];
  for (let v = Math.floor(min / stride) * stride; v <= max + stride / 2; v += stride) out.push(v);
  return out;
}

/** The SVG text of `plot`. */
export function renderPlot(plot: Plot): string {
  const xs = plot.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = plot.series.flatMap((s) => s.points.map((p) => p[1]));
  const xTicks = ticks(Math.min(...xs), Math.max(...xs), plot.xLog === true);
  const yTicks = ticks(plot.yLog === true ? Math.min(...ys) : 0, Math.max(...ys), plot.yLog === true);
  const [x0, x1] = [xTicks[0]!, xTicks[xTicks.length - 1]!];
  const [y0, y1] = [yTicks[0]!, yTicks[yTicks.length - 1]!];
  const scale = (v: number, lo: number, hi: number, log: boolean): number =>
    log ? (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : (v - lo) / (hi - lo || 1);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const px = (v: number): number => MARGIN.left + scale(v, x0, x1, plot.xLog === true) * plotW;
  const py = (v: number): number => MARGIN.top + plotH - scale(v, y0, y1, plot.yLog === true) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="14">${escapeXml(plot.title)}</text>`,
  ];
  for (const t of xTicks) {
    const x = px(t).toFixed(1);
    out.push(`<line x1="${x}" y1="${MARGIN.top}" x2="${x}" y2="${MARGIN.top + plotH}" stroke="#ddd"/>`);
    out.push(`<text x="${x}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${niceNumber(t)}</text>`);
  }
  for (const t of yTicks) {
    const y = py(t).toFixed(1);
    out.push(`<line x1="${MARGIN.left}" y1="${y}" x2="${MARGIN.left + plotW}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${MARGIN.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${niceNumber(t)}</text>`);
  }
  out.push(`<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${MARGIN.left + plotW / 2}" y="${MARGIN.top + plotH + 36}" text-anchor="middle">${escapeXml(plot.xLabel)}</text>`);
  out.push(
    `<text x="16" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${MARGIN.top + plotH / 2})">${escapeXml(plot.yLabel)}</text>`,
  );
  plot.series.forEach((series, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const points = series.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`);
    out.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${colour}" stroke-width="2"/>`);
    for (const p of points) {
      const [cx, cy] = p.split(',');
      out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${colour}"/>`);
    }
    const ly = HEIGHT - MARGIN.bottom + 52 + Math.floor(i / 2) * 16;
    const lx = MARGIN.left + (i % 2) * (plotW / 2);
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 20}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`);
    out.push(`<text x="${lx + 26}" y="${ly}" dominant-baseline="middle">${escapeXml(series.label)}</text>`);
  });
  out.push('</svg>', '');
  return out.join('\n');
}
