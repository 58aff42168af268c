/** `, borrows 2` / `, lends 3` / `, falling 2 a round` (hard against fair share), or nothing. */
export function lentWords(
  x: { hard: number; base: number; want: number },
  unit: (n: number) => string = String,
): string {
  const d = x.hard - x.base;
  if (d < 0) return `, lends ${unit(-d)}`;
  if (d === 0) return '';
  return x.want > x.base ? `, borrows ${unit(Math.min(d, x.want - x.base))}` : `, held ${unit(d)} above it`;
}
