/**
 * The proof that an `Approval Decided` came from someone allowed to decide: an HMAC-SHA256 (the
 * `seal`) over every field of the decision, with a key only `chatops` (after it verified the
 * platform's signature and the caller's role) and `remediate-approve` may read — a SecureString in
 * Parameter Store that serverless.yml grants to those two roles alone — and, for
 * `gpu-reflex approve`, a person whose own AWS identity may read it.
 *
 * Why a seal and not the event's source: anyone who may put events on the bus (a node's agent key,
 * any function's role) can write `source: gpu-reflex.chatops` and any `decidedBy`; the IAM
 * conditions on `events:source` (serverless.yml) narrow that, the seal closes it. An unsealed or
 * badly sealed decision is refused, and so is every decision where no key is configured: a
 * deployment without the key approves nothing, it never approves everything.
 *
 * Replaying a sealed decision is harmless: it names its approval, and an approval closes once.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ApprovalDecidedDetail } from '../../events/index.ts';
import { ConfigurationError } from '../adapters/errors.ts';

/** The key itself (a laptop, the embedded stack); a deployment names a parameter instead. */
export const APPROVAL_KEY_ENV = 'GPU_REFLEX_APPROVAL_KEY';
/** An SSM Parameter Store SecureString holding the key (serverless.yml: /gpu-reflex/<stage>/approval-key). */
export const APPROVAL_KEY_PARAMETER_ENV = 'GPU_REFLEX_APPROVAL_KEY_PARAMETER';
/** 32 characters of `openssl rand -base64 32` carry 192 bits; fewer is a password, not a key. */
export const APPROVAL_KEY_MIN_LENGTH = 32;

/** An opaque key: never logged, never in an error. */
export interface ApprovalKey {
  readonly kind: 'approval-key';
  readonly bytes: Buffer;
}

export type SealCheck = 'valid' | 'missing' | 'forged';

type Decision = Pick<
  ApprovalDecidedDetail,
  'eventId' | 'occurredAt' | 'approvalId' | 'decision' | 'decidedBy' | 'comment'
>;

export function approvalKey(text: string, where: string): ApprovalKey {
  const value = text.trim();
  if (value.length < APPROVAL_KEY_MIN_LENGTH)
    throw new ConfigurationError(
      `${where}: the approval key must be at least ${APPROVAL_KEY_MIN_LENGTH} characters (it has ${value.length}); ` +
        `make one with: openssl rand -base64 32`,
      { what: where },
    );
  return { kind: 'approval-key', bytes: Buffer.from(value, 'utf8') };
}

/**
 * The key where the environment names one: the key itself wins, else the parameter, read with the
 * caller's own identity (ssm:GetParameter on that one parameter). Undefined where neither is set.
 */
export async function approvalKeyFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  read?: (parameter: string, label: string) => Promise<string>,
): Promise<ApprovalKey | undefined> {
  const inline = env[APPROVAL_KEY_ENV];
  if (inline) return approvalKey(inline, APPROVAL_KEY_ENV);
  const parameter = env[APPROVAL_KEY_PARAMETER_ENV];
  if (!parameter) return undefined;
  const text = await (read ?? (await import('../adapters/ssm.ts')).readSecureString)(parameter, 'approval key');
  return approvalKey(text, `${APPROVAL_KEY_PARAMETER_ENV} (ssm:${parameter})`);
}

/** Every field of the decision, in a fixed order; JSON so no field can run into the next. */
function sealedText(d: Decision): string {
  const by = d.decidedBy;
  return JSON.stringify([
    'gpu-reflex approval decision v1',
    d.eventId,
    d.occurredAt,
    d.approvalId,
    d.decision,
    by?.platform ?? null,
    by?.id ?? null,
    by?.name ?? null,
    d.comment ?? null,
  ]);
}

export function sealOf(key: ApprovalKey, d: Decision): string {
  return createHmac('sha256', key.bytes).update(sealedText(d)).digest('base64url');
}

/** The decision with its seal. */
export function sealDecision<D extends Decision>(key: ApprovalKey, d: D): D & { seal: string } {
  return { ...d, seal: sealOf(key, d) };
}

/** Whether `d.seal` is this key's seal over exactly these fields (compared in constant time). */
export function checkSeal(key: ApprovalKey, d: Decision & { seal?: string | undefined }): SealCheck {
  if (!d.seal) return 'missing';
  const want = Buffer.from(sealOf(key, d), 'utf8');
  const got = Buffer.from(d.seal, 'utf8');
  return want.length === got.length && timingSafeEqual(want, got) ? 'valid' : 'forged';
}
