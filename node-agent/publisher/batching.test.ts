import { describe, expect, it } from 'vitest';
import { entrySize, MAX_CALL_BYTES, takeBatch } from './batching.ts';
import { backoffDelay, classifyCallError, isRetryableEntryCode } from './retry-policy.ts';

const r = (detail: string, resources?: string[]) => ({
  source: 'src',
  detailType: 'Type',
  detail,
  ...(resources ? { resources } : {}),
});

describe('entrySize', () => {
  it('counts 14 bytes for Time plus UTF-8 bytes of Source, DetailType, Detail and each Resource', () => {
    expect(entrySize(r('{}'))).toBe(14 + 3 + 4 + 2);
    expect(entrySize(r('{"t":"é"}', ['arn:1', 'arn:22']))).toBe(14 + 3 + 4 + 10 + 5 + 6);
  });
});

describe('takeBatch', () => {
  it.each([
    [25, 10],
    [10, 10],
    [3, 3],
    [0, 0],
  ])('takes at most 10 of %i small entries (%i)', (n, expected) => {
    expect(takeBatch(Array.from({ length: n }, () => r('{}')))).toHaveLength(expected);
  });

  it('stops before the call would pass 256 KB, but always takes the first entry', () => {
    const big = r('x'.repeat(MAX_CALL_BYTES - 100));
    expect(takeBatch([big, r('x'.repeat(200))])).toHaveLength(1);
    expect(takeBatch([big, r('x'.repeat(50))])).toHaveLength(2);
  });
});

describe('backoffDelay', () => {
  it.each([
    [1, 1, 99],
    [2, 1, 199],
    [4, 1, 799],
    [10, 1, 4_999],
    [3, 0, 0],
  ])('attempt %i with random %f waits %i ms (full jitter, capped)', (attempt, random, expected) => {
    expect(backoffDelay(attempt, { baseMs: 100, capMs: 5_000 }, () => (random === 1 ? 0.9999 : random))).toBe(expected);
  });
});

describe('error classification', () => {
  it.each([
    ['ThrottlingException', true],
    ['InternalFailure', true],
    ['MalformedDetail', false],
    ['InvalidArgument', false],
  ])('entry code %s retryable: %s', (code, expected) => {
    expect(isRetryableEntryCode(code)).toBe(expected);
  });

  it.each([
    [Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'unavailable'],
    [Object.assign(new Error('x'), { name: 'InternalException', $metadata: { httpStatusCode: 500 } }), 'unavailable'],
    [Object.assign(new Error('x'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 429 } }), 'unavailable'],
    [
      Object.assign(new Error('x'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } }),
      'unavailable',
    ],
    [Object.assign(new Error('x'), { name: 'ValidationException', $metadata: { httpStatusCode: 400 } }), 'rejected'],
    ['not even an error', 'unavailable'],
  ])('a call failing with %s is %s', (err, failure) => {
    expect(classifyCallError(err).failure).toBe(failure);
  });
});
