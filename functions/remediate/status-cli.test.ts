import { describe, expect, it } from 'vitest';
import { UsageError } from '../../events/cli-kit/command.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { ApprovalRecord } from '../lib/approvals.ts';
import { emptyState, encodeNodeState, type Incident, type NodeState } from './core/state.ts';
import { heldNodes, statusCommand, statusTable } from './status-cli.ts';

const T = '2026-01-01T00:00:00.000Z';
function incident(over: Partial<Incident>): Incident {
  return {
    key: 'k',
    trigger: 'xid',
    xid: 79,
    gpu: 'GPU-a',
    qid: 'GPU-a',
    scope: 'gpu',
    action: 'quarantine-gpu',
    ladder: ['quarantine-gpu'],
    level: 0,
    phase: 'quarantined',
    firstAt: T,
    lastAt: T,
    count: 1,
    workloads: [],
    pods: [],
    since: T,
    eventId: 'e',
    ...over,
  } as Incident;
}
function node(name: string, state?: Partial<NodeState>): NodeInfo {
  const meta = state ? encodeNodeState({ ...emptyState(), ...state }) : undefined;
  return {
    name,
    labels: meta ? meta.labels : {},
    annotations: meta
      ? Object.fromEntries(Object.entries(meta.annotations).filter((e): e is [string, string] => e[1] !== null))
      : {},
    taints: [],
    unschedulable: false,
    ready: true,
    allocatable: {},
    resourceVersion: '1',
  };
}
const approval = (id: string, n: string, status: ApprovalRecord['status'] = 'open'): ApprovalRecord => ({
  id,
  node: n,
  incident: 'k',
  action: 'drain-node',
  scope: 'node',
  target: { gpus: [], pods: [] },
  requestedAt: T,
  expiresAt: T,
  approvers: [],
  status,
});

describe('heldNodes', () => {
  it('lists only held nodes, with fence verification and the open approvals', () => {
    const held = heldNodes(
      [
        node('healthy'),
        node('never-labelled', { phase: 'healthy' }),
        node('q', {
          phase: 'quarantined',
          quarantinedGpus: ['GPU-a'],
          incidents: [incident({ fence: { backend: 'ack-file', verifiedAt: '2026-01-01T00:00:09.000Z' } })],
        }),
        node('unverified', {
          phase: 'quarantined',
          quarantinedGpus: ['GPU-b'],
          incidents: [incident({ gpu: 'GPU-b', qid: 'GPU-b', fence: { backend: 'dra' } })],
        }),
        node('drift', {
          phase: 'quarantined',
          quarantinedGpus: ['GPU-c'],
          incidents: [
            incident({ gpu: 'GPU-c', qid: 'GPU-c', fence: { backend: 'ack-file', verifiedAt: T, driftAt: T } }),
          ],
        }),
        node('w', {
          phase: 'awaiting-approval',
          incidents: [incident({ phase: 'awaiting-approval', action: 'drain-node' })],
        }),
      ],
      [approval('apr-1', 'w'), approval('apr-old', 'w', 'expired'), approval('apr-x', 'healthy', 'rejected')],
    );
    expect(held.map((h) => h.node)).toEqual(['drift', 'q', 'unverified', 'w']);
    const table = statusTable(held).join('\n');
    expect(table).toContain('ack-file verified 2026-01-01T00:00:09.000Z');
    expect(table).toContain('dra not verified yet');
    expect(table).toContain(`ack-file NOT holding since ${T}`);
    expect(held.find((h) => h.node === 'w')!.approvals.map((a) => a.id)).toEqual(['apr-1']);
    expect(held.find((h) => h.node === 'w')!.next).toBe('gpu-reflex approve apr-1');
    expect(table).not.toContain('apr-old');
  });

  it('says so when nothing is held', () => {
    expect(statusTable(heldNodes([node('a')], []))).toEqual(['no node is held by gpu-reflex']);
  });
});

describe('gpu-reflex status', () => {
  const io = { out: () => {}, err: () => {} };
  it('needs --kubeconfig and takes no argument', async () => {
    await expect(statusCommand.run([], io)).rejects.toThrow(UsageError);
    await expect(statusCommand.run(['--kubeconfig', 'x', 'extra'], io)).rejects.toThrow(/Unexpected argument 'extra'/);
    await expect(statusCommand.run(['--kubeconfig', 'x', '--bogus'], io)).rejects.toThrow(UsageError);
    await expect(statusCommand.run(['--watch'], io)).rejects.toThrow(UsageError);
    for (const bad of ['0', '1.5', 'soon', '3601'])
      await expect(statusCommand.run(['--kubeconfig', 'x', '--watch', bad], io)).rejects.toThrow(
        /--watch takes whole seconds/,
      );
  });
});
