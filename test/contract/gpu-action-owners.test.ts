/**
 * Every name in GPU_ACTION_OWNERS is a reflex that really uses the channel (docs/architecture.md "GPU
 * actions: the protocol"): its folder's production code asks (a `GpuActionSet` of its own owner) and
 * reads the answers (`gpuAnswerHandler` for its owner). A name listed and never written is a stub the
 * agent's precedence and the docs would describe as real (MIG was one until 2026-12-05).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GPU_ACTION_OWNERS } from '../../events/index.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

function productionText(folder: string): string {
  const out: string[] = [];
  const walk = (abs: string) => {
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) for (const e of readdirSync(abs).sort()) walk(join(abs, e));
    else if (abs.endsWith('.ts') && !abs.endsWith('.test.ts') && !abs.endsWith('testing.ts'))
      out.push(readFileSync(abs, 'utf8'));
  };
  walk(join(ROOT, 'functions', folder));
  return out.join('\n');
}

/** What an owner's production code must hold: a set it asks for, and its answers' handler. */
export function ownerUse(text: string, owner: string): { asks: boolean; answers: boolean } {
  const ownerField = new RegExp(`owner:\\s*'${owner}'`);
  return {
    asks: /GpuActionSet/.test(text) && ownerField.test(text),
    answers: /gpuAnswerHandler\s*\(/.test(text) && ownerField.test(text),
  };
}

describe('GPU-action owners', () => {
  it.each(GPU_ACTION_OWNERS.map((o) => [o]))('%s asks the agent for GPU actions and reads its answers', (owner) => {
    expect(ownerUse(productionText(owner), owner)).toEqual({ asks: true, answers: true });
  });

  it('the check sees a folder that only names the owner (a stub) as not using the channel', () => {
    expect(ownerUse(productionText('mig'), 'mig')).toEqual({ asks: false, answers: false });
    expect(ownerUse("const set: GpuActionSet = { owner: 'x', actions: [] };", 'x')).toEqual({
      asks: true,
      answers: false,
    });
  });
});
