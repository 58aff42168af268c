import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  matchesFields,
  matchesRequirements,
  parseFieldSelector,
  parseLabelSelector,
  requirementsOf,
} from './selectors.ts';
import type { KubeObject } from './types.ts';

const labels = { accelerator: 'nvidia-a100', pool: 'train', 'gpu-reflex.io/quarantine': 'true', gen: '3' };

describe('label selectors', () => {
  it.each([
    ['accelerator=nvidia-a100', true],
    ['accelerator==nvidia-a100', true],
    ['accelerator!=nvidia-a100', false],
    ['accelerator!=nvidia-t4', true],
    ['missing!=x', true],
    ['pool in (train, infer)', true],
    ['pool notin (train)', false],
    ['gpu-reflex.io/quarantine', true],
    ['!gpu-reflex.io/quarantine', false],
    ['!missing', true],
    ['pool=train,accelerator in (nvidia-h100)', false],
    ['gen>2', true],
    ['gen<3', false],
    ['', true],
  ])('%s → %s', (text, expected) => {
    expect(matchesRequirements(labels, parseLabelSelector(text))).toBe(expected);
  });

  it('refuses text that is not a selector', () => {
    expect(() => parseLabelSelector('a=b,(x')).toThrow(/unable to parse requirement/);
  });

  it('matches structured selectors (matchLabels and matchExpressions)', () => {
    expect(
      matchesRequirements(
        labels,
        requirementsOf({
          matchLabels: { pool: 'train' },
          matchExpressions: [{ key: 'accelerator', operator: 'In', values: ['nvidia-a100'] }],
        }),
      ),
    ).toBe(true);
    expect(
      matchesRequirements(labels, requirementsOf({ matchExpressions: [{ key: 'pool', operator: 'DoesNotExist' }] })),
    ).toBe(false);
    expect(matchesRequirements(labels, requirementsOf(undefined))).toBe(true);
  });

  it('never crashes on arbitrary text: it parses or throws an Error', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        try {
          matchesRequirements(labels, parseLabelSelector(text));
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
        }
      }),
    );
  });
});

describe('field selectors', () => {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ns', uid: '', resourceVersion: '', creationTimestamp: '' },
    spec: { nodeName: 'gpu-1' },
    status: { phase: 'Running' },
  } as KubeObject;
  it.each([
    ['spec.nodeName=gpu-1', true],
    ['spec.nodeName==gpu-2', false],
    ['spec.nodeName=gpu-1,status.phase!=Succeeded,status.phase!=Failed', true],
    ['metadata.name=p,metadata.namespace=ns', true],
    ['status.phase=Pending', false],
  ])('%s → %s', (text, expected) => {
    expect(matchesFields(pod, parseFieldSelector(text))).toBe(expected);
  });

  it('refuses fields the server does not index, naming them', () => {
    expect(() => parseFieldSelector('spec.hostname=x')).toThrow('field label not supported: spec.hostname');
  });
});
