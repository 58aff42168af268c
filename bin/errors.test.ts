import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { BadInputError, TransientError } from '../functions/adapters/errors.ts';
import { InputError, UsageError } from '../events/cli-kit/command.ts';
import { oneLine } from '../events/cli-kit/phrases.ts';
import { describeFailure } from './errors.ts';

const sys = (code: string, fields: Record<string, unknown>) =>
  Object.assign(new Error(`${code}: raw node text`), { code, ...fields });
const parseArgsError = (args: string[]) => {
  try {
    parseArgs({ args, options: { out: { type: 'string' } }, strict: true, allowPositionals: true });
  } catch (err) {
    return err;
  }
  throw new Error('parseArgs accepted it');
};
const zodError = () => z.object({ port: z.number(), host: z.string() }).safeParse({ port: 'x' }).error;

describe('describeFailure', () => {
  it.each([
    ['a usage error', new UsageError('--port must be an integer'), 2, '--port must be an integer'],
    [
      "parseArgs' unknown option, without its positional advice",
      parseArgsError(['--bogus']),
      2,
      "Unknown option '--bogus'",
    ],
    ["parseArgs' missing value", parseArgsError(['--out']), 2, "Option '--out <value>' argument missing"],
    [
      'an input error, whose message says it all',
      new InputError('cannot read --facts f.json: no such file', {
        cause: sys('ENOENT', { path: 'f.json', syscall: 'open' }),
      }),
      1,
      'cannot read --facts f.json: no such file',
    ],
    [
      "the adapters' BadInputError, with its cause's words",
      new BadInputError('kube access: cannot load k.yaml', { cause: sys('EISDIR', { syscall: 'read' }) }),
      1,
      'kube access: cannot load k.yaml: read: is a directory',
    ],
    [
      'an adapter error whose cause is our bug: the bug is not quoted',
      new TransientError('listing nodes', { cause: new TypeError('x is undefined') }),
      1,
      'listing nodes',
    ],
    [
      'a missing file',
      sys('ENOENT', { path: '/x/p.yaml', syscall: 'open' }),
      1,
      '/x/p.yaml: no such file or directory',
    ],
    [
      'an unreadable file',
      sys('EACCES', { path: '/root/p.yaml', syscall: 'open' }),
      1,
      '/root/p.yaml: permission denied',
    ],
    ['a directory read as a file', sys('EISDIR', { path: '/tmp', syscall: 'open' }), 1, '/tmp: is a directory'],
    [
      'a port in use',
      sys('EADDRINUSE', { syscall: 'listen', address: '127.0.0.1', port: 4010 }),
      1,
      'cannot listen on 127.0.0.1:4010: address already in use',
    ],
    [
      'a privileged port',
      sys('EACCES', { syscall: 'listen', address: '0.0.0.0', port: 80 }),
      1,
      'cannot listen on 0.0.0.0:80: permission denied (ports below 1024 need root)',
    ],
    [
      'a host that does not resolve',
      sys('ENOTFOUND', { syscall: 'getaddrinfo', hostname: '256.1.1.1' }),
      1,
      'cannot resolve host "256.1.1.1": no such host',
    ],
    [
      'a refused connection tried on two addresses',
      new AggregateError([sys('ECONNREFUSED', { syscall: 'connect', address: '::1', port: 6443 })]),
      1,
      'cannot connect to ::1:6443: connection refused',
    ],
    [
      'a JSON syntax error',
      (() => {
        try {
          JSON.parse('{ bad');
        } catch (e) {
          return e;
        }
      })(),
      1,
      /^not valid JSON: /,
    ],
    [
      'a schema failure: the first issue with its path, and how many more',
      zodError(),
      1,
      /^port: .*expected number.* \(and 1 more\)$/,
    ],
    [
      'a listing of problems folded into one line',
      new InputError('f is invalid:\n  a: bad\n  b: worse'),
      1,
      'f is invalid: a: bad; b: worse',
    ],
  ])('%s', (_what, err, exitCode, message) => {
    const f = describeFailure(err);
    expect(f.exitCode).toBe(exitCode);
    expect(f.expected).toBe(true);
    expect(f.message).not.toContain('\n');
    if (typeof message === 'string') expect(f.message).toBe(message);
    else expect(f.message).toMatch(message);
  });

  it.each([
    ['a TypeError (our bug)', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a thrown string', 'boom'],
  ])('reports %s as unexpected, with the --debug hint', (_what, err) => {
    const f = describeFailure(err);
    expect(f).toMatchObject({ exitCode: 1, expected: false });
    expect(f.message).toMatch(/^unexpected error: .* \(run with --debug for details\)$/);
  });
});

describe('oneLine', () => {
  it.each([
    ['one line', 'one line'],
    ['x is invalid:\n  a: bad\n  b: worse\n', 'x is invalid: a: bad; b: worse'],
    ['first problem\nsecond problem', 'first problem; second problem'],
  ])('folds %j into one line', (text, line) => expect(oneLine(text)).toBe(line));
});
