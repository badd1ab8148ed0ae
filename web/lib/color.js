// Colour scales readable with any colour vision: viridis (perceptually uniform, from dark
// blue through green to yellow; monotonic in lightness, so it also reads in grey).  Status
// is never told by colour alone: dashes, symbols and words go with it.
const VIRIDIS = [
  [68, 1, 84], [72, 35, 116], [64, 67, 135], [52, 94, 141], [41, 120, 142],
  [32, 144, 140], [34, 167, 132], [68, 190, 112], [121, 209, 81], [189, 222, 38], [253, 231, 37],
];

export function viridisRgb(t) {
  t = Math.min(1, Math.max(0, t));
  const x = t * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  return VIRIDIS[i].map((v, k) => Math.round(v + f * (VIRIDIS[i + 1][k] - v)));
}

// A CSS colour; grey for no value.
export function viridis(t) {
  if (t === null || t === undefined || Number.isNaN(t)) return '#bbbbbb';
  const [r, g, b] = viridisRgb(t);
  return `rgb(${r},${g},${b})`;
}

// A horizontal legend: a gradient strip with the low and high labels and the unit.
export function legend(doc, low, high, title) {
  const c = doc.createElement('canvas');
  c.width = 160;
  c.height = 12;
  c.className = 'legend-strip';
  const g = c.getContext('2d');
  for (let x = 0; x < 160; x++) {
    g.fillStyle = viridis(x / 159);
    g.fillRect(x, 0, 1, 12);
  }
  const wrap = doc.createElement('span');
  wrap.className = 'legend';
  wrap.append(`${title}: ${low} `, c, ` ${high}`);
  return wrap;
}
