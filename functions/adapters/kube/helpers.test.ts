import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../errors.ts';
import { toNodeInfo, toPodInfo } from './convert.ts';
import { podsRequesting, skipReason } from './drain.ts';
import { mergeStringMap, withTaint, withoutTaint } from './kube-node-ops.ts';
import { toLeaseState } from './kube-lease-ops.ts';
import { listAll } from './list-all.ts';
import { retryOnConflict } from './retry.ts';
import { sameJson } from './same-json.ts';

const NS = { key: 'k', effect: 'NoSchedule' } as const;

describe('withTaint', () => {
  it.each([
    ['adds to an empty list', [], { ...NS, value: 'a' }, [{ ...NS, value: 'a' }]],
    ['is a no-op for the same key, effect and value', [{ ...NS, value: 'a' }], { ...NS, value: 'a' }, undefined],
    [
      'replaces the value for the same key and effect',
      [{ ...NS, value: 'a' }],
      { ...NS, value: 'b' },
      [{ ...NS, value: 'b' }],
    ],
    ['treats an absent value as empty', [{ ...NS }], { ...NS, value: '' }, undefined],
    [
      'adds a second effect for the same key',
      [{ ...NS }],
      { key: 'k', effect: 'NoExecute' },
      [{ ...NS }, { key: 'k', effect: 'NoExecute' }],
    ],
  ] as const)('%s', (_name, current, taint, expected) => {
    expect(withTaint([...current], taint)).toEqual(expected);
  });

  it('keeps other taints untouched, timeAdded included', () => {
    const other = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: new Date(0) };
    expect(withTaint([other], NS)).toEqual([other, NS]);
  });
});

describe('withoutTaint', () => {
  const taints = [{ ...NS }, { key: 'k', effect: 'NoExecute' }, { key: 'o', effect: 'NoSchedule' }];
  it.each([
    ['by key removes every effect', 'k', undefined, [{ key: 'o', effect: 'NoSchedule' }]],
    ['by key and effect removes one', 'k', 'NoExecute', [{ ...NS }, { key: 'o', effect: 'NoSchedule' }]],
    ['an absent key is a no-op', 'zz', undefined, undefined],
    ['an absent effect is a no-op', 'o', 'NoExecute', undefined],
  ] as const)('%s', (_name, key, effect, expected) => {
    expect(withoutTaint(taints, key, effect)).toEqual(expected);
  });
});

describe('mergeStringMap', () => {
  it.each([
    [{ a: '1' }, { a: '1' }, undefined],
    [{ a: '1' }, { a: '2' }, { a: '2' }],
    [{ a: '1' }, { a: null }, { a: null }],
    [{}, { a: null }, undefined],
    [{ a: '1' }, { b: '2', a: '1' }, { b: '2' }],
  ])('%j with %j patches %j', (current, changes, expected) => {
    expect(mergeStringMap(current, changes)).toEqual(expected);
  });
});

describe('toPodInfo', () => {
  const pod: V1Pod = {
    metadata: {
      name: 'p',
      namespace: 'ns',
      uid: 'u',
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: 'x' }],
      deletionTimestamp: new Date(0),
    },
    spec: {
      nodeName: 'n1',
      terminationGracePeriodSeconds: 45,
      containers: [
        { name: 'a', resources: { limits: { 'nvidia.com/gpu': '2', cpu: '4' } } },
        { name: 'b', resources: { requests: { 'nvidia.com/gpu': '1', 'nvidia.com/mig-1g.10gb': '1' } } },
      ],
    },
    status: { phase: 'Running' },
  };

  it('sums extended resources over containers and ignores core resources', () => {
    expect(toPodInfo(pod).extendedResources).toEqual({ 'nvidia.com/gpu': 3, 'nvidia.com/mig-1g.10gb': 1 });
  });

  it('reads owners, termination and grace period', () => {
    expect(toPodInfo(pod)).toMatchObject({
      owners: [{ kind: 'DaemonSet', name: 'ds' }],
      terminating: true,
      terminationGracePeriodSeconds: 45,
      nodeName: 'n1',
      phase: 'Running',
    });
    expect(skipReason(toPodInfo(pod))).toBe('daemonset');
  });

  it('podsRequesting selects by extended resource', () => {
    expect(podsRequesting(['nvidia.com/mig-1g.10gb'])(toPodInfo(pod))).toBe(true);
    expect(podsRequesting(['nvidia.com/mig-3g.40gb'])(toPodInfo(pod))).toBe(false);
  });

  it('absent metadata maps become empty objects', () => {
    expect(toPodInfo({ metadata: { name: 'x' } })).toMatchObject({
      labels: {},
      annotations: {},
      owners: [],
      terminating: false,
      extendedResources: {},
    });
  });
});

describe('toNodeInfo', () => {
  it.each([
    ['True', true],
    ['False', false],
    ['Unknown', false],
  ])('Ready condition %s reads as %s', (status, ready) => {
    const n: V1Node = { metadata: { name: 'n' }, status: { conditions: [{ type: 'Ready', status }] } };
    expect(toNodeInfo(n).ready).toBe(ready);
  });

  it('a node without a Ready condition reads as undefined', () => {
    expect(toNodeInfo({ metadata: { name: 'n' } })).toMatchObject({
      ready: undefined,
      unschedulable: false,
      taints: [],
    });
  });
});

describe('toLeaseState', () => {
  it('expiry is renewTime plus the duration; MicroTime strings and Dates both read', () => {
    const renew = '2026-01-01T00:00:00.000000Z';
    expect(
      toLeaseState({
        metadata: { name: 'l' },
        spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime: renew as never },
      }).expiresAtMs,
    ).toBe(Date.parse(renew) + 15_000);
    expect(
      toLeaseState({
        metadata: { name: 'l' },
        spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime: new Date(1000) },
      }).expiresAtMs,
    ).toBe(16_000);
  });

  it('an empty or absent holder means free', () => {
    expect(
      toLeaseState({ metadata: { name: 'l' }, spec: { holderIdentity: '', leaseDurationSeconds: 15 } }),
    ).toMatchObject({ holder: undefined, expiresAtMs: 0 });
  });
});

describe('listAll', () => {
  it('follows continue tokens to the end', async () => {
    const pages: Record<string, { items: number[]; metadata?: { _continue?: string } }> = {
      start: { items: [1, 2], metadata: { _continue: 'p2' } },
      p2: { items: [3], metadata: { _continue: 'p3' } },
      p3: { items: [4], metadata: { _continue: '' } },
    };
    const seen: (string | undefined)[] = [];
    const all = await listAll(async (c) => (seen.push(c), pages[c ?? 'start']!));
    expect(all).toEqual([1, 2, 3, 4]);
    expect(seen).toEqual([undefined, 'p2', 'p3']);
  });

  it('stops a server that never ends the list', async () => {
    await expect(listAll(async () => ({ items: [], metadata: { _continue: 'again' } }))).rejects.toThrow(/10000 pages/);
  });
});

describe('retryOnConflict', () => {
  const conflict = Object.assign(new Error('409'), { code: 409, body: '{"message":"the object has been modified"}' });

  it('retries 409s and returns the first success', async () => {
    let n = 0;
    expect(await retryOnConflict('x', 3, async () => (++n < 3 ? Promise.reject(conflict) : 'ok'))).toBe('ok');
    expect(n).toBe(3);
  });

  it('gives up after the budget with ConflictError', async () => {
    let n = 0;
    await expect(retryOnConflict('patching node n', 2, async () => (n++, Promise.reject(conflict)))).rejects.toThrow(
      ConflictError,
    );
    expect(n).toBe(2);
  });

  it('does not retry other errors', async () => {
    let n = 0;
    await expect(
      retryOnConflict('x', 5, async () => (n++, Promise.reject(Object.assign(new Error(), { code: 404 })))),
    ).rejects.toThrow(NotFoundError);
    expect(n).toBe(1);
  });
});

describe('sameJson', () => {
  it.each([
    [{ a: 1, b: 2 }, { b: 2, a: 1 }, true],
    [{ a: [1, 2] }, { a: [2, 1] }, false],
    [{ a: undefined, b: 1 }, { b: 1 }, true],
    [1, '1', false],
  ])('%j vs %j → %s', (a, b, expected) => {
    expect(sameJson(a, b)).toBe(expected);
  });
});
