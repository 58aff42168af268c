import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commands } from '../../bin/main.ts';

/**
 * The README is part of the interface (issue #31): its CLI table names every command `gpu-reflex
 * --help` lists and no other, each option it shows is one the command's `--help` documents, and
 * every link it has goes to a file that exists and, with an anchor, to a heading in it.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const README = join(ROOT, 'README.md');
const text = readFileSync(README, 'utf8');

/** The rows of the table under "| command | what it does |": the command's code span. */
function cliRows(): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith('| command | what it does |'));
  const rows: string[] = [];
  for (const l of lines.slice(start + 2)) {
    if (!l.startsWith('|')) break;
    const m = /^\| `(gpu-reflex [^`]*)`/.exec(l);
    if (m) rows.push(m[1]!);
  }
  return rows;
}
const pathOf = (usage: string) => {
  const words = usage.split(/\s+/).slice(1);
  const path: string[] = [];
  for (const w of words) {
    if (!/^[a-z][a-z-]*$/.test(w)) break;
    path.push(w);
  }
  return path.join(' ');
};

/** GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    // An explicit anchor (`<a id="secrets"></a>`) names a place too.
    for (const a of fenced ? [] : line.matchAll(/<a id="([^"]+)"><\/a>/g)) out.add(a[1]!);
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const slug = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

describe("the README's CLI table", () => {
  it('names every command of gpu-reflex --help, and only those', () => {
    const listed = cliRows().map(pathOf).sort();
    expect(listed).toEqual(commands.map((c) => c.path.join(' ')).sort());
  });

  it.each(cliRows().map((r) => [pathOf(r), r]))("shows only options that %s's --help documents", async (path, row) => {
    const entry = commands.find((c) => c.path.join(' ') === path)!;
    const help = (await entry.load()).help;
    for (const flag of row.match(/--[a-z][a-z-]*/g) ?? []) expect(help, `${path}: ${flag}`).toContain(flag);
  });
});

describe("the README's links", () => {
  const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^(https?:|mailto:)/.test(l));

  it.each(links.map((l) => [l]))('%s leads to a file, and to a heading in it', (link) => {
    const [file, anchor] = link.split('#') as [string, string | undefined];
    const target = file === '' ? README : resolve(dirname(README), file);
    expect(existsSync(target), `${link}: no ${file}`).toBe(true);
    if (anchor !== undefined) expect([...anchors(readFileSync(target, 'utf8'))]).toContain(anchor);
  });
});
