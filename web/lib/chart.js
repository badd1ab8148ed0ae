// Time-series charts on Chart.js 3 (Debian's libjs-chart.js, served under /javascript/):
// linear time axis in seconds, units on both axes, a colour-blind-safe palette (Okabe-Ito) with
// a dash pattern per series so that lines are told apart without colour.
let lib = null;

export async function chartLib() {
  if (lib) return lib;
  try {
    const m = await import('/javascript/chart.js/chart.esm.js');
    m.Chart.register(...m.registerables);
    lib = m.Chart;
    return lib;
  } catch (e) {
    throw new Error('the chart library is missing: install Debian\'s libjs-chart.js (rocefabd serves it from api.javascript_root)');
  }
}

export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00'];
const DASHES = [[], [6, 3], [2, 2], [8, 2, 2, 2]];

function tick(v, span) {
  const d = new Date(v * 1000);
  const t = d.toISOString();
  return span < 10 ? t.slice(14, 23) : span < 86400 ? t.slice(11, 19) : t.slice(5, 16).replace('T', ' ');
}

// series: [{label, points: [[t, v], ...]}]; unit: the y axis title; fmt: tick formatter.
export async function lineChart(canvas, title, unit, series, fmt, span, opts = {}) {
  const Chart = await chartLib();
  return new Chart(canvas, {
    type: 'line',
    data: {
      datasets: series.map((s, i) => ({
        label: s.label,
        data: s.points.map(([x, y]) => ({ x, y })),
        borderColor: PALETTE[i % PALETTE.length],
        backgroundColor: PALETTE[i % PALETTE.length],
        borderDash: DASHES[i % DASHES.length],
        borderWidth: 1.5,
        pointRadius: s.points.length < 3 ? 3 : 0,
        spanGaps: false,
      })),
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      normalized: true,
      interaction: { mode: 'nearest', axis: 'x', intersect: false },
      plugins: {
        title: { display: true, text: title },
        legend: { display: series.length > 1 },
        tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${fmt(c.parsed.y)}`, title: (c) => (c.length ? new Date(c[0].parsed.x * 1000).toISOString() : '') } },
      },
      scales: {
        x: { type: 'linear', title: { display: true, text: opts.xTitle || 'sample time (UTC)' }, ticks: { callback: (v) => tick(v, span), maxTicksLimit: 5, maxRotation: 0, autoSkipPadding: 16 } },
        y: { beginAtZero: true, max: opts.yMax, title: { display: true, text: unit }, ticks: { callback: (v) => fmt(v) } },
      },
    },
  });
}
