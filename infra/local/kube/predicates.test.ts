import { describe, expect, it } from 'vitest';
import { requiredAffinity, requirementHolds, termMatches, toleratesTaint } from './predicates.ts';
import type { Pod, Taint, Toleration } from './types.ts';

/** Cases from Kubernetes' own tables (k8s.io/api/core/v1/toleration_test.go, labels/selector_test.go, nodeaffinity_test.go). */
describe('the simulated scheduler tolerates taints as ToleratesTaint does', () => {
  const taint: Taint = { key: 'gpu', value: 'a100', effect: 'NoSchedule' };
  it.each<[string, Toleration, boolean]>([
    ['Equal on key and value', { key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoSchedule' }, true],
    ['an absent operator as Equal', { key: 'gpu', value: 'a100' }, true],
    ['Equal with another value', { key: 'gpu', operator: 'Equal', value: 't4' }, false],
    ['Equal without a value against a valued taint', { key: 'gpu', operator: 'Equal' }, false],
    ['Exists on the key, any value', { key: 'gpu', operator: 'Exists' }, true],
    ['Exists with no key: every taint', { operator: 'Exists' }, true],
    ['Exists with no key but another effect', { operator: 'Exists', effect: 'NoExecute' }, false],
    ['another key', { key: 'other', operator: 'Exists' }, false],
    ['an empty effect: every effect', { key: 'gpu', operator: 'Exists', effect: '' }, true],
    ['an unknown operator tolerates nothing', { key: 'gpu', operator: 'Gt', value: '1' }, false],
  ])('%s', (_, t, want) => {
    expect(toleratesTaint(t, taint)).toBe(want);
  });

  it('compares an absent taint value as ""', () => {
    expect(toleratesTaint({ key: 'k', operator: 'Equal', value: '' }, { key: 'k', effect: 'NoSchedule' })).toBe(true);
  });
});

describe('the simulated scheduler matches label requirements as Requirement.Matches does', () => {
  it.each<[string, string | undefined, boolean]>([
    ['In', 'a', true],
    ['In', 'c', false],
    ['In', undefined, false],
    ['NotIn', 'a', false],
    ['NotIn', 'c', true],
    ['NotIn', undefined, true],
    ['Exists', '', true],
    ['Exists', undefined, false],
    ['DoesNotExist', undefined, true],
    ['DoesNotExist', 'a', false],
  ])('%s against %j', (operator, value, want) => {
    const values = operator === 'In' || operator === 'NotIn' ? ['a', 'b'] : [];
    expect(requirementHolds({ operator, values }, value)).toBe(want);
  });

  it.each<[string, string, string | undefined, boolean]>([
    ['Gt', '4', '8', true],
    ['Gt', '8', '8', false],
    ['Lt', '9', '8', true],
    ['Gt', '-1', '0', true],
    ['Gt', '+3', '4', true],
    ['Gt', '4', undefined, false],
    // strconv.ParseInt(s, 10, 64) reads none of these as an integer, so they match nothing.
    ['Gt', '4', '1e3', false],
    ['Gt', '4', '0x10', false],
    ['Gt', '4', ' 8', false],
    ['Gt', '4', '8.0', false],
    ['Gt', '-1', '', false],
    ['Gt', '1', '9223372036854775808', false],
    ['Gt', '9007199254740992', '9007199254740993', true],
  ])('%s %s against %j', (operator, bound, value, want) => {
    expect(requirementHolds({ operator, values: [bound] }, value)).toBe(want);
  });

  it('refuses Gt with more than one bound', () => {
    expect(requirementHolds({ operator: 'Gt', values: ['1', '2'] }, '5')).toBe(false);
  });
});

describe('the simulated scheduler matches node selector terms as nodeaffinity.NodeSelector does', () => {
  const labels = { zone: 'a', gpus: '8' };
  it('selects no node with an empty term', () => {
    expect(termMatches({}, labels, 'n1')).toBe(false);
    expect(termMatches({ matchExpressions: [], matchFields: [] }, labels, 'n1')).toBe(false);
  });

  it.each<[string, object, boolean]>([
    ['metadata.name In', { key: 'metadata.name', operator: 'In', values: ['n1'] }, true],
    ['metadata.name In another', { key: 'metadata.name', operator: 'In', values: ['n2'] }, false],
    ['metadata.name NotIn another', { key: 'metadata.name', operator: 'NotIn', values: ['n2'] }, true],
    ['metadata.name In two names (an error)', { key: 'metadata.name', operator: 'In', values: ['n1', 'n2'] }, false],
    ['another field (an error)', { key: 'spec.unschedulable', operator: 'In', values: ['false'] }, false],
  ])('matchFields %s', (_, field, want) => {
    expect(termMatches({ matchFields: [field as never] }, labels, 'n1')).toBe(want);
  });

  it('reads only a node label of its own, never an Object property', () => {
    expect(termMatches({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, labels, 'n1')).toBe(false);
  });

  const pod = (spec: Partial<Pod['spec']>): Pod =>
    ({ metadata: { name: 'p' }, spec: { containers: [], ...spec } }) as Pod;
  it('needs every nodeSelector entry and any one term', () => {
    const terms = [
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
      { matchExpressions: [{ key: 'gpus', operator: 'Gt', values: ['4'] }] },
    ];
    expect(
      requiredAffinity(
        pod({
          nodeSelector: { zone: 'a' },
          affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
        }),
      )(labels, 'n1'),
    ).toBe(true);
    expect(requiredAffinity(pod({ nodeSelector: { zone: 'b' } }))(labels, 'n1')).toBe(false);
    expect(requiredAffinity(pod({ nodeSelector: { zone: '' } }))({}, 'n1')).toBe(false);
  });

  it('matches no node when required affinity has no terms', () => {
    expect(
      requiredAffinity(
        pod({
          affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } },
        }),
      )(labels, 'n1'),
    ).toBe(false);
  });
});
