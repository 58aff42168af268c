import { mkdtemp, readFile, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { main } from '../../bin/main.ts';
import { UsageError, type CliIo } from '../../events/cli-kit/command.ts';
import { listCommand, schemasCommand, validateCommand } from '../../events/cli.ts';
import { CATALOG } from '../../events/catalog.ts';

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l) };
}
const example = (slug: string) => new URL(`../../events/catalog/${slug}.example.json`, import.meta.url).pathname;

describe('gpu-reflex events', () => {
  it('lists one detail-type per line with its source', async () => {
    const io = capture();
    expect(await main(['events', 'list'], io)).toBe(0);
    expect(io.stdout).toHaveLength(CATALOG.length); // one line per detail-type of the catalog
    expect(io.stdout[0]).toMatch(/^GPU XID Error\s+gpu-reflex\.node-agent$/);
  });

  it('validates the shipped examples with exit 0', async () => {
    const io = capture();
    const files = (await readdir(new URL('../../events/catalog/', import.meta.url))).filter((f) =>
      f.endsWith('.example.json'),
    );
    expect(await main(['events', 'validate', ...files.map((f) => example(f.replace('.example.json', '')))], io)).toBe(
      0,
    );
    expect(io.stderr).toEqual([]);
    expect(io.stdout).toEqual([`${files.length} of ${files.length} files valid`]);
  });

  it('exits 1 on a hand-broken copy and names the field', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gr-events-'));
    const ev = JSON.parse(await readFile(example('gpu-xid-error'), 'utf8'));
    ev.detail.xid = '79';
    delete ev.detail.node;
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify(ev));
    const io = capture();
    expect(await main(['events', 'validate', example('remediation'), bad], io)).toBe(1);
    expect(io.stderr).toEqual([
      `${bad}: detail.node: required, but missing`,
      `${bad}: detail.xid: expected integer, got "79"`,
    ]);
    expect(io.stdout).toEqual(['1 of 2 files valid']);
  });

  // The command's own contract, not only the dispatcher's: a caller without bin/errors.ts gets a UsageError too.
  it.each([
    ['list', listCommand, ['--bogus']],
    ['schemas', schemasCommand, ['--out']],
    ['validate', validateCommand, ['events/catalog/gpu-xid-error.example.json', '--bogus']],
  ])('events %s refuses bad usage as a UsageError', async (_, command, args) => {
    await expect(command.run(args, capture())).rejects.toThrow(UsageError);
  });

  it('reports unreadable and non-JSON files instead of crashing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gr-events-'));
    await writeFile(join(dir, 'x.json'), '{ not json');
    const io = capture();
    expect(await main(['events', 'validate', join(dir, 'x.json'), join(dir, 'missing.json')], io)).toBe(1);
    expect(io.stderr[0]).toMatch(/x\.json: \(file\): not JSON/);
    expect(io.stderr[1]).toMatch(/missing\.json: cannot read: no such file or directory$/);
  });

  it('writes a JSON Schema file per detail-type', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gr-schemas-'));
    const io = capture();
    expect(await main(['events', 'schemas', '--out', dir], io)).toBe(0);
    const files = await readdir(dir);
    expect(files).toHaveLength(CATALOG.length);
    const xid = JSON.parse(await readFile(join(dir, 'gpu-xid-error.schema.json'), 'utf8'));
    expect(xid.properties.xid.type).toBe('integer');
  });

  it('prints help for every command and refuses unknown ones', async () => {
    for (const argv of [['events', 'list', '--help'], ['events', 'validate', '--help'], ['--help']]) {
      const io = capture();
      expect(await main(argv, io)).toBe(0);
      expect(io.stdout.join('\n')).toMatch(/Usage: gpu-reflex/);
    }
    const io = capture();
    expect(await main(['frobnicate'], io)).toBe(2);
    expect(io.stderr[0]).toMatch(/unknown command "frobnicate"/);
  });

  it('runs as a real process through bin/gpu-reflex.js with no build step', async () => {
    const bin = new URL('../../bin/gpu-reflex.js', import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(process.execPath, [bin, '--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
