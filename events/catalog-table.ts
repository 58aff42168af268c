/**
 * The README's event catalog table, generated from CATALOG (events/catalog.ts): one row per
 * detail-type, in the catalog's order, with its source, what it says and its example. The README
 * holds it between the two markers below; `node scripts/readme-catalog.js` rewrites it there, and
 * events/catalog-table.test.ts fails when the two differ.
 */
import { CATALOG } from './catalog.ts';

export const BEGIN =
  '<!-- event-catalog: generated from events/catalog.ts by scripts/readme-catalog.js; do not edit -->';
export const END = '<!-- /event-catalog -->';

export function catalogTable(): string {
  const rows = CATALOG.map(
    (e) =>
      `| \`${e.detailType}\` | \`${e.source}\` | ${e.summary} | [example](events/catalog/${e.slug}.example.json) |`,
  );
  return ['| detail-type | source | what it says | example |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** `text` with the table between the markers replaced; throws when the markers are missing. */
export function withCatalogTable(text: string): string {
  const from = text.indexOf(BEGIN);
  const to = text.indexOf(END);
  if (from < 0 || to < from) throw new Error(`README.md has no "${BEGIN}" … "${END}" block`);
  return `${text.slice(0, from + BEGIN.length)}\n${catalogTable()}\n${text.slice(to)}`;
}
