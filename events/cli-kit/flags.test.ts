import { describe, expect, it } from 'vitest';
import { UsageError } from './command.ts';
import { parseFlags, portFlag } from './flags.ts';

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
