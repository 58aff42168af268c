import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CATALOG } from './catalog.ts';
import { BEGIN, END, catalogTable, withCatalogTable } from './catalog-table.ts';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

describe('the event catalog in the docs', () => {
  it('README.md holds the table generated from events/catalog.ts (node scripts/readme-catalog.js rewrites it)', () => {
    const readme = read('README.md');
    expect(readme).toContain(BEGIN);
    expect(readme, 'README.md drifted from events/catalog.ts: run node scripts/readme-catalog.js').toBe(
      withCatalogTable(readme),
    );
  });

  it('has one row per detail-type, each linking an example that exists', () => {
    const rows = catalogTable().split('\n').slice(2);
    expect(rows).toHaveLength(CATALOG.length);
    for (const e of CATALOG) {
      expect(
        rows.filter((r) => r.startsWith(`| \`${e.detailType}\` | \`${e.source}\` |`)),
        e.detailType,
      ).toHaveLength(1);
      expect(existsSync(new URL(`./catalog/${e.slug}.example.json`, import.meta.url)), e.slug).toBe(true);
    }
  });

  it('docs/event-catalog.md describes every detail-type with its source, and no other', () => {
    const documented = [...read('docs/event-catalog.md').matchAll(/^\| `([^`]+)` \| `([^`]+)` \|/gm)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
    expect(documented.sort()).toEqual(CATALOG.map((e) => `${e.detailType} ${e.source}`).sort());
  });

  it('refuses a README without the markers rather than appending a table somewhere', () => {
    expect(() => withCatalogTable('# no table')).toThrow(END);
  });
});
