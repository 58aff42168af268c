import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ApprovalDecidedDetail } from '../../events/index.ts';
import { ApprovalDecidedDetailSchema } from '../../events/index.ts';
import { approvalKey, approvalKeyFromEnv, checkSeal, sealDecision } from './approval-seal.ts';

const KEY = approvalKey('x'.repeat(40), 'test');
const D: ApprovalDecidedDetail = {
  schemaVersion: 1,
  eventId: 'decision:apr-7f3c9a12:slack:U1:1',
  occurredAt: '2026-11-21T03:05:02.000Z',
  approvalId: 'apr-7f3c9a12',
  decision: 'approved',
  decidedBy: { platform: 'slack', id: 'U1', name: 'ops' },
  comment: 'ok',
};

describe('approval seal', () => {
  it('seals a decision the schema accepts, and checks it', () => {
    const sealed = sealDecision(KEY, D);
    expect(ApprovalDecidedDetailSchema.parse(sealed)).toEqual(sealed);
    expect(checkSeal(KEY, sealed)).toBe('valid');
    expect(checkSeal(KEY, D)).toBe('missing');
    expect(checkSeal(approvalKey('y'.repeat(40), 'other'), sealed)).toBe('forged');
  });

  it('finds any change to any field under a real seal', () => {
    const sealed = sealDecision(KEY, D);
    const changes: fc.Arbitrary<Partial<ApprovalDecidedDetail>> = fc.oneof(
      fc.string({ minLength: 1 }).map((eventId) => ({ eventId })),
      fc.date({ noInvalidDate: true }).map((t) => ({ occurredAt: t.toISOString() })),
      fc.constantFrom('apr-00000000', 'apr-7f3c9a13').map((approvalId) => ({ approvalId })),
      fc.constantFrom('rejected' as const, 'expired' as const).map((decision) => ({ decision })),
      fc.string().map((id) => ({ decidedBy: { platform: 'slack' as const, id, name: 'ops' } })),
      fc
        .constantFrom('dingtalk' as const, 'feishu' as const, 'cli' as const)
        .map((platform) => ({ decidedBy: { platform, id: 'U1', name: 'ops' } })),
      fc.string().map((comment) => ({ comment })),
    );
    fc.assert(
      fc.property(changes, (change) => {
        const changed = { ...sealed, ...change };
        fc.pre(JSON.stringify(changed) !== JSON.stringify(sealed));
        expect(checkSeal(KEY, changed)).toBe('forged');
      }),
    );
  });

  it('reads the key from the environment or its parameter, refusing one too short to be a key', async () => {
    expect(await approvalKeyFromEnv({})).toBeUndefined();
    const read: string[] = [];
    const key = await approvalKeyFromEnv(
      { GPU_REFLEX_APPROVAL_KEY_PARAMETER: '/gpu-reflex/prod/approval-key' },
      async (p) => (read.push(p), 'z'.repeat(44)),
    );
    expect(read).toEqual(['/gpu-reflex/prod/approval-key']);
    expect(checkSeal(key!, sealDecision(approvalKey('z'.repeat(44), 'same'), D))).toBe('valid');
    await expect(approvalKeyFromEnv({ GPU_REFLEX_APPROVAL_KEY_PARAMETER: '/p' }, async () => 'short')).rejects.toThrow(
      'GPU_REFLEX_APPROVAL_KEY_PARAMETER (ssm:/p): the approval key must be at least 32 characters (it has 5); make one with: openssl rand -base64 32',
    );
    // The key itself wins over the parameter, and the error never shows a value.
    await expect(
      approvalKeyFromEnv({ GPU_REFLEX_APPROVAL_KEY: 'secret-but-short', GPU_REFLEX_APPROVAL_KEY_PARAMETER: '/p' }),
    ).rejects.toThrow(/^GPU_REFLEX_APPROVAL_KEY: .*\(it has 16\)/);
  });
});
