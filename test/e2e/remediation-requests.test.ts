/**
 * Kubernetes API requests per remediated node (issue #10: target ≤ 10 excluding one eviction per
 * pod). One XID 79 drain through the real handler and @kubernetes/client-node against the
 * simulated cluster; every HTTP request the cluster receives is counted by method and path.
 */
import { manualClock } from '../../functions/adapters/clock.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REMEDIATION } from '../../events/index.ts';
import { xidEvent } from '../../node-agent/events.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';

let stack: RemediationStack;
const requests: string[] = [];
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

beforeAll(async () => {
  stack = await startRemediationStack({
    clock,
    fleet: {
      nodes: [
        {
          name: 'req',
          count: 5,
          labels: { 'gpu-reflex.io/pool': 'req' },
          allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' },
        },
      ],
      namespaces: [{ name: NAMESPACE }, { name: 'ml' }],
      pods: [0, 1, 2].map((i) => ({
        name: `train-${i}`,
        namespace: 'ml',
        node: 'req-0',
        owner: { kind: 'Job' as const, name: `train-${i}` },
        requests: { 'nvidia.com/gpu': 2 },
      })),
    },
  });
  stack.sim.server.on('request', (req: { method?: string; url?: string }) =>
    requests.push(`${req.method} ${(req.url ?? '').split('?')[0]}`),
  );
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

describe('requests per remediated node', () => {
  it('drains a node in at most 10 Kubernetes API requests, not counting one eviction per pod and the Events recorded', async () => {
    const gpu = {
      index: 0,
      uuid: 'GPU-00000000-0000-4000-8000-000000000000',
      pciBusId: '00000000:10:00.0',
      name: 'NVIDIA A100-SXM4-80GB',
    };
    await stack.send([
      xidEvent('req-0', clock.now(), {
        gpu,
        xid: 79,
        via: 'nvml',
        pid: null,
        process: null,
        message: 'Xid 79',
        podUids: [],
      }),
    ]);
    await stack.advance(0);
    expect(stack.published(REMEDIATION)).toHaveLength(1);
    const evictions = requests.filter((r) => r.endsWith('/eviction'));
    expect(evictions).toHaveLength(3);
    // The Kubernetes Events (what `kubectl describe node` shows) are the audit trail, counted apart
    // from the remediation's own work: one for the node patch (Cordoned, the taint in its note),
    // one for all the evictions (PodsEvicted) — not one per pod, whatever the pod count.
    const eventWrites = requests.filter((r) => /\/events(\?|$)/.test(r) && r.startsWith('POST'));
    expect(eventWrites).toHaveLength(2);
    const rest = requests.filter((r) => !r.endsWith('/eviction') && !eventWrites.includes(r));
    console.log(
      `kube requests for one drain (excluding ${evictions.length} evictions and ${eventWrites.length} Event records): ${rest.length}\n  ${rest.join('\n  ')}`,
    );
    expect(rest.length).toBeLessThanOrEqual(10);
  });
});
