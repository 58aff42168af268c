import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Context } from 'aws-lambda';
import { eventHandler } from './handler.ts';
import { createLogger } from './logger.ts';
import { ConflictError, NotFoundError, BadInputError } from '../adapters/errors.ts';

const example = JSON.parse(readFileSync(new URL('../../events/catalog/gpu-xid-error.example.json', import.meta.url), 'utf8'));
const ctx = { awsRequestId: 'req-1' } as Context;

function setup(handle: () => Promise<unknown>) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ service: 'test', sink: (l) => lines.push(l), level: 'debug' });
  return { lines, h: eventHandler({ name: 'remediate', detailTypes: ['GPU XID Error'], logger, handle }) };
}

describe('eventHandler', () => {
  it('hands a parsed detail to the core and reports its result', async () => {
    let seen: unknown;
    const { h } = setup(async () => 'ok');
    expect(await h(example, ctx)).toEqual({ status: 'done', result: 'ok' });
    const h2 = eventHandler({ name: 'x', detailTypes: ['GPU XID Error'], logger: createLogger({ service: 't', sink: () => {} }), handle: async (e) => { seen = e.detail; } });
    await h2(example, ctx);
    expect(seen).toMatchObject({ xid: 79, node: 'gpu-a100-07' });
  });

  it('drops a malformed event with every problem named, and never retries it', async () => {
    const { h, lines } = setup(async () => { throw new Error('must not run'); });
    const bad = structuredClone(example);
    bad.detail.xid = '79';
    expect(await h(bad, ctx)).toEqual({ status: 'dropped', reason: 'detail.xid: expected integer, got "79"' });
    expect(lines[0]).toMatchObject({ level: 'warn', message: 'dropping bad event', function: 'remediate', requestId: 'req-1' });
  });

  it('drops detail-types it does not handle', async () => {
    const { h } = setup(async () => 'ok');
    const other = JSON.parse(readFileSync(new URL('../../events/catalog/gpu-inventory.example.json', import.meta.url), 'utf8'));
    expect(await h(other, ctx)).toMatchObject({ status: 'dropped', reason: expect.stringMatching(/not one of "GPU XID Error"/) });
  });

  it('acknowledges not-found as already done and bad input as dropped', async () => {
    expect(await setup(async () => { throw new NotFoundError('node gone'); }).h(example, ctx)).toEqual({ status: 'already-done', reason: 'node gone' });
    expect(await setup(async () => { throw new BadInputError('nonsense'); }).h(example, ctx)).toEqual({ status: 'dropped', reason: 'nonsense' });
  });

  it('throws retryable and unexpected failures so the platform retries them', async () => {
    await expect(setup(async () => { throw new ConflictError('stale'); }).h(example, ctx)).rejects.toThrow('stale');
    await expect(setup(async () => { throw new TypeError('bug'); }).h(example, ctx)).rejects.toThrow('bug');
  });
});
