import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UsageError, type CliIo } from '../../events/cli-kit/command.ts';
import { main } from '../../bin/main.ts';
import type { KernelXid } from '../kmsg/parse-xid.ts';
import { createXidScanCommand } from './xid-scan.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../kmsg/fixtures/${name}`, import.meta.url));

function capture(input?: string): CliIo & { lines: string[]; errors: string[]; xids: () => KernelXid[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return {
    lines,
    errors,
    out: (l) => lines.push(l),
    err: (l) => errors.push(l),
    ...(input === undefined
      ? {}
      : { readInput: async (p: string) => (p === '-' ? input : Promise.reject(new Error(p))) }),
    xids: () => lines.map((l) => JSON.parse(l) as KernelXid),
  };
}

const tty = createXidScanCommand({ stdinIsTTY: () => true });
const piped = createXidScanCommand({ stdinIsTTY: () => false });

describe('gpu-reflex xid scan', () => {
  it.each([
    [
      'dmesg.log',
      [
        ['00000000:3B:00.0', 79],
        ['00000000:07:00.0', 31],
        ['00000000:B7:00.0', 48],
        ['00000000:C1:00.0', 43],
      ],
    ],
    [
      'kmsg.txt',
      [
        ['00000000:07:00.0', 13],
        ['00000000:07:00.0', 13],
        ['00000000:47:00.0', 94],
      ],
    ],
    [
      'journald.log',
      [
        ['00000000:4E:00.0', 74],
        ['00000000:01:00.0', 13],
        ['00000000:90:00.0', 999],
        ['00000000:BD:00.0', 119],
      ],
    ],
  ])('prints one JSON object per XID in %s', async (name, expected) => {
    const io = capture();
    expect(await tty.run([fixture(name)], io)).toBe(0);
    expect(io.xids().map((x) => [x.pci, x.xid])).toEqual(expected);
  });

  it('prints every field of an XID', async () => {
    const io = capture();
    await tty.run([fixture('dmesg.log')], io);
    expect(io.xids()[0]).toEqual({
      pci: '00000000:3B:00.0',
      xid: 79,
      pid: 1234,
      process: 'python',
      message: 'GPU has fallen off the bus.',
      meaning: 'GPU has fallen off the bus',
      recommendation: 'drain the node and power-cycle it; if it recurs, replace',
      action: 'drain-node',
    });
  });

  it('reads standard input for -', async () => {
    const io = capture('[1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, gone\n');
    expect(await tty.run(['-'], io)).toBe(0);
    expect(io.xids().map((x) => x.xid)).toEqual([79]);
  });

  it('reads standard input by default when it is not a terminal', async () => {
    async function* stdin() {
      yield Buffer.from('NVRM: Xid (PCI:0000:07:00): 13, x\nnoise\n');
    }
    const io = capture();
    const cmd = createXidScanCommand({ stdinIsTTY: () => false, stdin: stdin });
    expect(await cmd.run([], io)).toBe(0);
    expect(io.xids().map((x) => x.xid)).toEqual([13]);
  });

  it.each([
    ['no FILE on a terminal', tty, [], /give a FILE/],
    ['two FILEs', piped, ['a', 'b'], /one FILE at most/],
    ['--follow with standard input', piped, ['-', '--follow'], /--follow needs a FILE/],
    ['an unknown option', piped, ['--nope'], /^Unknown option '--nope'$/],
    ['-f, short for --follow, with standard input', piped, ['-', '-f'], /--follow needs a FILE/],
  ])('rejects %s as bad usage', async (_what, cmd, args, message) => {
    await expect(cmd.run(args, capture())).rejects.toThrow(UsageError);
    await expect(cmd.run(args, capture())).rejects.toThrow(message);
  });

  it('exits 1 naming the file it cannot read', async () => {
    const io = capture();
    expect(await tty.run(['/nonexistent/kern.log'], io)).toBe(1);
    expect(io.errors).toEqual(['gpu-reflex xid scan: cannot read /nonexistent/kern.log: no such file or directory']);
  });

  it('is registered in the CLI', async () => {
    const io = capture();
    expect(await main(['xid', 'scan', fixture('kmsg.txt')], io)).toBe(0);
    expect(io.xids()).toHaveLength(3);
    const help = capture();
    expect(await main(['xid', 'scan', '--help'], help)).toBe(0);
    expect(help.lines[0]).toMatch(/^Usage: gpu-reflex xid scan/);
  });
});
