import { describe, expect, it } from 'vitest';
import { UsageError } from './command.ts';
import { parseFlags, parseFlagsAndArgs, portFlag } from './flags.ts';

describe('parseFlags', () => {
  it('returns the named options', () => {
    expect(parseFlags(['--port', '80', '--json'], { port: { type: 'string' }, json: { type: 'boolean' } })).toEqual({
      port: '80',
      json: true,
    });
  });

  it('collects a repeated option declared multiple', () => {
    expect(
      parseFlags(['--namespace', 'a', '--namespace', 'b'], { namespace: { type: 'string', multiple: true } }),
    ).toEqual({ namespace: ['a', 'b'] });
  });

  it.each([
    ['an unknown option', ['--bogus'], /Unknown option '--bogus'/],
    ['a positional', ['extra'], /Unexpected argument 'extra'/],
    ['an option without its value', ['--port'], /--port/],
  ])('refuses %s as a usage error (one line, exit code 2)', (_, args, message) => {
    const run = () => parseFlags(args, { port: { type: 'string' } });
    expect(run).toThrow(UsageError);
    expect(run).toThrow(message);
  });
});

describe('parseFlagsAndArgs', () => {
  const options = { out: { type: 'string' }, json: { type: 'boolean' } } as const;

  it('returns the named options and the positionals in their order, wherever they stand', () => {
    expect(parseFlagsAndArgs(['a.json', '--out', 'x', 'b.json', '--json'], options)).toEqual({
      values: { out: 'x', json: true },
      positionals: ['a.json', 'b.json'],
    });
    expect(parseFlagsAndArgs([], options)).toEqual({ values: {}, positionals: [] });
  });

  it('takes an argument after -- as a positional, even one that looks like an option', () => {
    expect(parseFlagsAndArgs(['--', '--json'], options)).toEqual({ values: {}, positionals: ['--json'] });
  });

  // The advice node adds (place a '-' argument after '--') is left out: bin/errors.ts leaves it out of node's own
  // error too, so a command's line reads the same whichever of the two reaches the user.
  it.each([
    ['an unknown option', ['a.json', '--bogus'], "Unknown option '--bogus'"],
    ['an unknown short option', ['-x'], "Unknown option '-x'"],
    ['an option without its value', ['a.json', '--out'], "Option '--out <value>' argument missing"],
  ])('refuses %s as a usage error (one line, exit code 2)', (_, args, message) => {
    const run = () => parseFlagsAndArgs(args, options);
    expect(run).toThrow(UsageError);
    expect(run).toThrow(new UsageError(message));
  });
});

describe('portFlag', () => {
  it('lets the OS choose when unset and takes 0 to 65535', () => {
    expect(portFlag('port', undefined)).toBe(0);
    expect(portFlag('port', '0')).toBe(0);
    expect(portFlag('http-port', '65535')).toBe(65535);
  });

  it.each(['65536', '-1', '8.5', 'eighty', ''])('refuses %j, naming the flag', (text) => {
    expect(() => portFlag('http-port', text)).toThrow(UsageError);
    expect(() => portFlag('http-port', text)).toThrow(`--http-port must be an integer from 0 to 65535 (got "${text}")`);
  });
});
