/**
 * A clean clone must pass its own tests. Engineers keep notes in a folder beside the repository;
 * nothing the repository ships (source, test, doc, config) may name it, at run time, test time or
 * as a citation a reader cannot follow. Facts it needs are copied into `docs/` or `test/data/`.
 *
 * The needles are built from parts so this file does not match itself.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const folder = ['sha', 'red'].join('');
const notesPages = ['reference', 'conformance', 'seeds', 'hooks', 'ARCHITECTURE', 'STYLE'].join('|');

/** Ways a file names the folder: a relative path, a citation of one of its pages, path parts, an absolute path. */
const NEEDLES: RegExp[] = [
  new RegExp(`\\.\\.[/\\\\]${folder}\\b`),
  new RegExp(`\\b${folder}[/\\\\](${notesPages})\\b`),
  new RegExp(`['"]\\.\\.['"]\\s*,\\s*['"]${folder}['"]`),
  new RegExp(`/work/${folder}\\b`),
];

const SKIP_DIRS = new Set(['node_modules', '.git', '.build', 'dist', 'coverage', '.serverless']);

/** Tracked and would-be-tracked files (git ls-files, ignored ones left out); a tree without git (an unpacked tarball) is walked instead. */
function shippedFiles(root: string): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return out.split('\0').filter((f) => f !== '');
  } catch {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
        const rel = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          if (!SKIP_DIRS.has(entry.name)) walk(rel);
        } else if (entry.isFile()) files.push(rel);
      }
    };
    walk('');
    return files;
  }
}

/** `file:line: text` for every line naming the notes folder; binary files are skipped. */
function citations(root: string, files: string[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(path.join(root, file), 'utf8');
    } catch {
      continue; // listed by git but deleted in the work tree
    }
    if (text.includes('\0')) continue;
    text.split('\n').forEach((line, i) => {
      if (NEEDLES.some((n) => n.test(line))) found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

describe('the repository is self-contained', () => {
  it('names the notes folder beside it in no tracked file', () => {
    const files = shippedFiles(repoRoot);
    expect(files.length).toBeGreaterThan(100);
    expect(citations(repoRoot, files)).toEqual([]);
  });

  it.each([
    ['a relative path', `see ../${folder}/reference/xid.md`],
    ['a citation without ../', `(${folder}/reference/mig.md)`],
    ['path.resolve parts', `path.resolve(root, '..', '${folder}', 'conformance')`],
    ['an absolute path', `/work/${folder}/STYLE.md`],
  ])('recognises %s', (_name, line) => {
    expect(NEEDLES.some((n) => n.test(line))).toBe(true);
  });

  it.each([['shared memory'], ['a shared/exclusive lock'], ['shared by A100, H100'], ['shared/other-thing']])(
    'lets "%s" pass',
    (line) => {
      expect(NEEDLES.some((n) => n.test(line))).toBe(false);
    },
  );
});
