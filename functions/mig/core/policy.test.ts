import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migConfig } from '../wiring.ts';
import { DEFAULT_MIG_POLICY, parseMigPolicy, protectedBy } from './policy.ts';

describe('the MIG policy', () => {
  it('is off by default, one GPU a round, notifying', () => {
    expect(DEFAULT_MIG_POLICY.preemption).toEqual({
      enabled: false,
      minPriorityGap: 1000,
      maxGpusPerRound: 1,
      protect: [],
      notify: true,
    });
    expect(parseMigPolicy('preemption: { enabled: true }').preemption).toMatchObject({
      enabled: true,
      minPriorityGap: 1000,
    });
  });

  it.each([
    ['preemption: { minPriorityGap: 0 }', /preemption\.minPriorityGap/],
    ['preemption: { maxGpusPerRound: 0 }', /preemption\.maxGpusPerRound/],
    ['preemption: { protect: [{ namespace: "Not A Name" }] }', /preemption\.protect\.0/],
    ['preemption: { enabled: "yes" }', /preemption\.enabled/],
    ['preemption: { enable: true }', /preemption/],
  ])('names the field of a mistake: %s', (text, field) => {
    expect(() => parseMigPolicy(text, 'p.yaml')).toThrow(field);
  });

  it('protects by namespace or PriorityClass name', () => {
    const rules = [{ namespace: 'kube-system' }, { priorityClassName: 'interactive' }];
    expect(protectedBy({ namespace: 'kube-system' }, rules)).toBe('namespace kube-system is protected');
    expect(protectedBy({ namespace: 'ml', priorityClassName: 'interactive' }, rules)).toBe(
      'PriorityClass interactive is protected',
    );
    expect(protectedBy({ namespace: 'ml' }, rules)).toBeUndefined();
  });

  it('is read from MIG_POLICY_FILE by the wiring; without it, preemption is off', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mig-policy-'));
    const file = join(dir, 'mig.yaml');
    writeFileSync(file, 'preemption: { enabled: true, minPriorityGap: 5 }\n');
    expect(migConfig({ MIG_POLICY_FILE: file }).own.mig.preemption).toMatchObject({ enabled: true, minPriorityGap: 5 });
    expect(migConfig({}).own.mig.preemption?.enabled).toBe(false);
    writeFileSync(file, 'preemption: { minPriorityGap: -1 }\n');
    expect(() => migConfig({ MIG_POLICY_FILE: file })).toThrow(
      /bad configuration: .*mig\.yaml.*preemption\.minPriorityGap/s,
    );
  });
});
