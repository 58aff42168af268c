/**
 * Generates `nvidia.generated.ts` and `nvidia-names.generated.ts` from the two committed tables beside it, NVIDIA's XID
 * catalog
 * (`nvidia-xid-catalog.tsv`) and its XID 144–150 decode sheet (`nvlink5-decode.tsv`), so the next
 * catalog NVIDIA publishes is one run away:
 *
 *   npx tsx events/xid/generate.ts           # rewrite nvidia.generated.ts
 *   npx tsx events/xid/generate.ts --check   # exit 1 when it is out of date (generate.test.ts does this too)
 *
 * The tables are tab-separated with a header row; `#` lines are comments (their source and date).
 * A malformed row stops the run with its line number: a catalog is never half-read.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { NVIDIA_BUCKETS, NVLINK5_RESOLUTIONS, type Nvlink5DecodeRow, type NvidiaXidEntry } from './types.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
export const CATALOG_TABLE = join(HERE, 'nvidia-xid-catalog.tsv');
export const DECODE_TABLE = join(HERE, 'nvlink5-decode.tsv');
export const GENERATED = join(HERE, 'nvidia.generated.ts');
export const GENERATED_NAMES = join(HERE, 'nvidia-names.generated.ts');

const CATALOG_COLUMNS = ['code', 'mnemonic', 'description', 'immediate_action', 'investigatory_action'];
const DECODE_COLUMNS = [
  'xid',
  'unit',
  'intrinfo_v1',
  'intrinfo_v2',
  'error_status',
  'resolution',
  'investigatory',
  'severity',
  'action2',
  'hw_sw',
  'local_remote',
];
const PATTERN = /^[01-]{32}$/;

/** `\n` in a cell is a line break in NVIDIA's sheet; `\\` a backslash. */
function unescapeCell(cell: string): string {
  return cell.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
}

/** Rows of a table as records keyed by its header; the `#` comment lines are returned apart. */
export function readTable(
  text: string,
  columns: readonly string[],
  name: string,
): { comments: string[]; rows: { line: number; cells: Record<string, string> }[] } {
  const comments: string[] = [];
  const rows: { line: number; cells: Record<string, string> }[] = [];
  let header: string[] | undefined;
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.startsWith('#')) return void comments.push(line.slice(1).trim());
    if (line.trim() === '') return;
    const cells = line.split('\t');
    if (!header) {
      header = cells;
      if (header.join('\t') !== columns.join('\t'))
        throw new Error(`${name}:${i + 1}: expected the columns ${columns.join(', ')}, got ${header.join(', ')}`);
      return;
    }
    if (cells.length !== columns.length)
      throw new Error(`${name}:${i + 1}: expected ${columns.length} tab-separated cells, got ${cells.length}`);
    rows.push({ line: i + 1, cells: Object.fromEntries(columns.map((c, n) => [c, unescapeCell(cells[n]!)])) });
  });
  if (!header) throw new Error(`${name}: no header row`);
  return { comments, rows };
}

function integer(text: string, where: string, what: string): number {
  const n = /^0x[0-9a-fA-F]+$/.test(text) ? Number.parseInt(text, 16) : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new Error(`${where}: ${what} "${text}" is not a number`);
  return n;
}

export function parseCatalog(text: string): NvidiaXidEntry[] {
  const seen = new Set<number>();
  return readTable(text, CATALOG_COLUMNS, 'nvidia-xid-catalog.tsv').rows.map(({ line, cells }) => {
    const where = `nvidia-xid-catalog.tsv:${line}`;
    const code = integer(cells.code!, where, 'code');
    if (seen.has(code)) throw new Error(`${where}: XID ${code} is listed twice`);
    seen.add(code);
    const bucket = cells.immediate_action! === '' ? 'NONE_GIVEN' : cells.immediate_action!;
    if (!(NVIDIA_BUCKETS as readonly string[]).includes(bucket))
      throw new Error(
        `${where}: XID ${code}: bucket "${bucket}" is new: add it to NVIDIA_BUCKETS (types.ts) and decide its ` +
          `default (defaults.ts)`,
      );
    return {
      code,
      mnemonic: cells.mnemonic!,
      description: cells.description!,
      immediate: bucket as NvidiaXidEntry['immediate'],
      investigatory: cells.investigatory_action!,
    };
  });
}

export function parseDecode(text: string): Nvlink5DecodeRow[] {
  return readTable(text, DECODE_COLUMNS, 'nvlink5-decode.tsv').rows.map(({ line, cells }) => {
    const where = `nvlink5-decode.tsv:${line}`;
    for (const p of ['intrinfo_v1', 'intrinfo_v2'])
      if (!PATTERN.test(cells[p]!)) throw new Error(`${where}: ${p} "${cells[p]}" is not 32 characters of 0, 1 and -`);
    const xid = integer(cells.xid!, where, 'xid');
    if (xid < 144 || xid > 150) throw new Error(`${where}: XID ${xid} is not an NVLink5 XID (144–150)`);
    if (!(NVLINK5_RESOLUTIONS as readonly string[]).includes(cells.resolution!))
      throw new Error(`${where}: resolution "${cells.resolution}" is new: add it to NVLINK5_RESOLUTIONS (types.ts)`);
    return {
      xid,
      unit: cells.unit!,
      intrinfoV1: cells.intrinfo_v1!,
      intrinfoV2: cells.intrinfo_v2!,
      errorStatus: integer(cells.error_status!, where, 'error_status'),
      resolution: cells.resolution! as Nvlink5DecodeRow['resolution'],
      investigatory: cells.investigatory!,
      severity: cells.severity!,
      action2: cells.action2!,
      hwSw: cells.hw_sw!,
      localRemote: cells.local_remote!,
    };
  });
}

/**
 * The generated modules' text. What the functions bundle (`nvidia.generated.ts`: code, description
 * and bucket; the decode rows grouped by unit) is kept apart from what only people read
 * (`nvidia-names.generated.ts`: mnemonic and investigatory action), and both are tuples: every
 * function bundle carries the catalog, and each must stay under 1.5 MB (test/contract/build.test.ts).
 * The decode sheet's columns no decision or reason uses (action2, hw_sw, local_remote) stay in the table.
 */
export function render(catalogText: string, decodeText: string): { catalog: string; names: string } {
  const catalog = parseCatalog(catalogText);
  const decode = parseDecode(decodeText);
  const source = readTable(catalogText, CATALOG_COLUMNS, 'nvidia-xid-catalog.tsv').comments.map((c) =>
    `// ${c}`.trimEnd(),
  );
  const s = JSON.stringify;
  const head = [
    '// Generated by events/xid/generate.ts from nvidia-xid-catalog.tsv and nvlink5-decode.tsv: do not edit.',
    ...source,
  ];
  const units: { key: string; rows: Nvlink5DecodeRow[] }[] = [];
  for (const r of decode) {
    const key = `${r.xid}\t${r.unit}\t${r.intrinfoV1}\t${r.intrinfoV2}`;
    const last = units.at(-1);
    if (last?.key === key) last.rows.push(r);
    else units.push({ key, rows: [r] });
  }
  const catalogOut = [
    ...head,
    "import type { CatalogTuple, UnitTuple } from './types.ts';",
    '',
    "/** Every code in NVIDIA's catalog, in its order: [code, description, immediate action]. */",
    'export const NVIDIA_XIDS: readonly CatalogTuple[] = [',
    ...catalog.map((e) => `  [${e.code}, ${s(e.description)}, ${s(e.immediate)}],`),
    '];',
    '',
    '/** NVIDIA\'s "XID 144-150 Decode" sheet by unit: [xid, unit, intrinfo v1, intrinfo v2, [[errorStatus, ' +
      'resolution, investigatory, severity], …]]. */',
    'export const NVLINK5_UNITS: readonly UnitTuple[] = [',
    ...units.map(({ rows }) => {
      const r0 = rows[0]!;
      return (
        `  [${r0.xid}, ${s(r0.unit)}, ${s(r0.intrinfoV1)}, ${s(r0.intrinfoV2)}, ` +
        `[${rows
          .map((r) => `[0x${r.errorStatus.toString(16)}, ${s(r.resolution)}, ${s(r.investigatory)}, ${s(r.severity)}]`)
          .join(', ')}]],`
      );
    }),
    '];',
    '',
  ].join('\n');
  const namesOut = [
    ...head,
    '',
    "/** NVIDIA's mnemonic and investigatory action of each code: [code, mnemonic, investigatory action]. */",
    'export const NVIDIA_XID_NAMES: readonly (readonly [number, string, string])[] = [',
    ...catalog.map((e) => `  [${e.code}, ${s(e.mnemonic)}, ${s(e.investigatory)}],`),
    '];',
    '',
  ].join('\n');
  return { catalog: catalogOut, names: namesOut };
}

function main(argv: string[]): number {
  const out = render(readFileSync(CATALOG_TABLE, 'utf8'), readFileSync(DECODE_TABLE, 'utf8'));
  const files: [string, string][] = [
    [GENERATED, out.catalog],
    [GENERATED_NAMES, out.names],
  ];
  if (argv.includes('--check')) {
    const stale = files.filter(([path, text]) => readFileSync(path, 'utf8') !== text);
    for (const [path] of stale) process.stderr.write(`${path} is out of date: run npx tsx events/xid/generate.ts\n`);
    return stale.length === 0 ? 0 : 1;
  }
  for (const [path, text] of files) {
    writeFileSync(path, text);
    process.stdout.write(`wrote ${path}\n`);
  }
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = main(process.argv.slice(2));
