import { describe, expect, it } from 'vitest';
import { main } from '../bin/main.ts';
import type { CliIo } from './cli-kit/command.ts';
import { patternTestCommand } from './pattern-cli.ts';

/** A capturing io whose "files" are an in-memory map; `-` is standard input. */
function fakeIo(files: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    readInput: async (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return text;
    },
  };
  return { io, out, err };
}

const EVENT = JSON.stringify({
  source: 'gpu-reflex.node-agent',
  'detail-type': 'GPU XID Error',
  detail: { node: 'gpu-node-7', xid: 79 },
});
const XID_RULE =
  '{"source":["gpu-reflex.node-agent"],"detail-type":["GPU XID Error"],"detail":{"xid":[{"numeric":[">=",0]}]}}';

describe('gpu-reflex pattern test', () => {
  it.each([
    ['a matching pattern', XID_RULE, '{"Result": true}'],
    ['a pattern that does not match', '{"detail":{"xid":[13]}}', '{"Result": false}'],
  ])('prints the result for %s and exits 0', async (_name, pattern, expected) => {
    const { io, out, err } = fakeIo({ 'p.json': pattern, 'e.json': EVENT });
    expect(await patternTestCommand.run(['--pattern', 'p.json', '--event', 'e.json'], io)).toBe(0);
    expect(out).toEqual([expected]);
    expect(err).toEqual([]);
  });

  it('reads one of the two from standard input', async () => {
    const { io, out } = fakeIo({ '-': XID_RULE, 'e.json': EVENT });
    expect(await patternTestCommand.run(['--pattern', '-', '--event', 'e.json'], io)).toBe(0);
    expect(out).toEqual(['{"Result": true}']);
  });

  it('prints the reason for an invalid pattern on stderr and exits 1', async () => {
    const { io, out, err } = fakeIo({ 'p.json': '{"detail":{"xid":[]}}', 'e.json': EVENT });
    expect(await patternTestCommand.run(['--pattern', 'p.json', '--event', 'e.json'], io)).toBe(1);
    expect(out).toEqual([]);
    expect(err).toEqual(['Event pattern is not valid. Reason: Empty arrays are not allowed']);
  });

  it.each([
    ['a missing file', { 'e.json': EVENT }, /cannot read --pattern file "p.json": ENOENT/],
    [
      'a pattern that is not JSON',
      { 'p.json': '{source: x}', 'e.json': EVENT },
      /--pattern file "p.json" is not valid JSON: Expected a string key at position 1/,
    ],
    ['an event that is not JSON', { 'p.json': XID_RULE, 'e.json': '{"a":' }, /--event file "e.json" is not valid JSON/],
    [
      'an event that is not an object',
      { 'p.json': XID_RULE, 'e.json': '[1]' },
      /--event file "e.json" must hold a JSON object/,
    ],
  ])('names the file and exits 1 for %s', async (_name, files, message) => {
    const { io, out, err } = fakeIo(files);
    expect(await patternTestCommand.run(['--pattern', 'p.json', '--event', 'e.json'], io)).toBe(1);
    expect(out).toEqual([]);
    expect(err.join('\n')).toMatch(message);
  });

  it.each([
    [['--event', 'e.json'], /--pattern FILE is required/],
    [['--pattern', 'p.json'], /--event FILE is required/],
    [['--pattern', '-', '--event', '-'], /only one of --pattern and --event/],
    [['--pattern', 'p.json', '--event', 'e.json', 'extra'], /Unexpected argument 'extra'/],
    [['--pattern', 'p.json', '--event', 'e.json', '--verbose'], /Unknown option '--verbose'/],
  ])('refuses usage %j with exit 2 through the dispatcher', async (args, message) => {
    const { io, err } = fakeIo({ 'p.json': XID_RULE, 'e.json': EVENT });
    expect(await main(['pattern', 'test', ...args], io)).toBe(2);
    expect(err[0]).toMatch(message);
  });

  it('is registered in the CLI and prints its help', async () => {
    const { io, out } = fakeIo({});
    expect(await main(['pattern', 'test', '--help'], io)).toBe(0);
    expect(out.join('\n')).toContain('Usage: gpu-reflex pattern test --pattern FILE --event FILE');
  });
});
