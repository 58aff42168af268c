import { describe, expect, it } from 'vitest';
import { taskFrom } from './records.ts';

describe('taskFrom (DescribeTaskInfo)', () => {
  it('reads the states ACK documents: running, success, failed (older docs: fail)', () => {
    expect(taskFrom('T', { state: 'running' })).toEqual({ id: 'T', state: 'running' });
    expect(taskFrom('T', { state: 'success' })).toEqual({ id: 'T', state: 'success' });
    expect(taskFrom('T', { state: 'failed', error: { code: 'X', message: 'y' } })).toEqual({
      id: 'T',
      state: 'failed',
      error: { code: 'X', message: 'y' },
    });
    expect(taskFrom('T', { state: 'fail' })).toMatchObject({ state: 'failed' });
  });

  it('reads a state ACK does not document, or none, as unknown with its word: never as running or done', () => {
    expect(taskFrom('T', { state: 'canceled' })).toEqual({ id: 'T', state: 'unknown', raw: 'canceled' });
    expect(taskFrom('T', { state: 'Success' })).toEqual({ id: 'T', state: 'unknown', raw: 'Success' });
    expect(taskFrom('T', {})).toEqual({ id: 'T', state: 'unknown', raw: '' });
    expect(taskFrom('T', { state: '' })).toEqual({ id: 'T', state: 'unknown', raw: '' });
  });
});
