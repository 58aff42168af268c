import { describe, expect, it } from 'vitest';
import {
  AdapterError,
  BadInputError,
  BlockedError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ThrottledError,
  TooManyRequestsError,
  TransientError,
  fromKubeError,
  isRetryable,
  kubeStatusMessage,
} from './errors.ts';

/** Shaped like @kubernetes/client-node's ApiException: numeric code, Status JSON string body. */
function apiException(code: number, message?: string): Error & { code: number; body: string } {
  const body = message === undefined ? '' : JSON.stringify({ kind: 'Status', status: 'Failure', message, code });
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code, body });
}

describe('fromKubeError', () => {
  it.each([
    [404, NotFoundError, false],
    [409, ConflictError, true],
    [429, ThrottledError, true],
    [403, ForbiddenError, false],
    [401, ForbiddenError, false],
    [400, BadInputError, false],
    [422, BadInputError, false],
    [500, TransientError, true],
    [503, TransientError, true],
  ] as const)('maps HTTP %i to %o (retryable %s)', (code, cls, retryable) => {
    const err = fromKubeError(apiException(code, 'boom'), 'patching node n1');
    expect(err).toBeInstanceOf(cls);
    expect(err.retryable).toBe(retryable);
    expect(isRetryable(err)).toBe(retryable);
    expect(err.status).toBe(code);
  });

  it('puts the Status message after the action phrase and forwards the cause', () => {
    const cause = apiException(403, 'exceeded quota: team-a, requested: nvidia.com/gpu=2');
    const err = fromKubeError(cause, 'creating pod team-a/train');
    expect(err.message).toBe('creating pod team-a/train: exceeded quota: team-a, requested: nvidia.com/gpu=2');
    expect(err.what).toBe('creating pod team-a/train');
    expect(err.cause).toBe(cause);
    expect(err.name).toBe('ForbiddenError');
  });

  it('keeps the bare phrase when the body carries no message', () => {
    expect(fromKubeError(apiException(500), 'listing pods').message).toBe('listing pods');
  });

  it('treats network failures (code in cause) as transient', () => {
    const err = fromKubeError(
      new Error('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) }),
      'listing nodes',
    );
    expect(err).toBeInstanceOf(TransientError);
    expect(err.message).toBe('listing nodes: ECONNREFUSED');
  });

  it('passes an already-mapped error through unchanged', () => {
    const mapped = new BlockedError('evicting pod a/b');
    expect(fromKubeError(mapped, 'other')).toBe(mapped);
  });
});

describe('error classes', () => {
  it('TooManyRequestsError is the throttling class', () => {
    expect(new TooManyRequestsError('x')).toBeInstanceOf(ThrottledError);
  });

  it.each([
    [new NotFoundError('a'), false],
    [new BadInputError('a'), false],
    [new BlockedError('a'), true],
    [new TransientError('a'), true],
  ])('%o retryable is %s', (err, retryable) => {
    expect(err).toBeInstanceOf(AdapterError);
    expect(err.retryable).toBe(retryable);
  });

  it('plain errors are not retryable', () => {
    expect(isRetryable(new Error('x'))).toBe(false);
  });
});

describe('kubeStatusMessage', () => {
  it.each([
    ['{"kind":"Status","message":"nodes \\"x\\" not found"}', 'nodes "x" not found'],
    [{ message: 'object body' }, 'object body'],
    ['plain text', 'plain text'],
    ['', undefined],
    [undefined, undefined],
    ['{"kind":"Status"}', undefined],
  ])('reads %j as %j', (body, expected) => {
    expect(kubeStatusMessage(body)).toBe(expected);
  });
});
