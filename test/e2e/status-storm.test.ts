import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commands } from '../../bin/main.ts';
import { createStatusCommand, type HeldNode } from '../../functions/remediate/status-cli.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * `gpu-reflex status` on the storm scenario's cluster after its run (virtual time): the drained
 * node and the two held for approval, with the approval IDs a person needs, and nothing written.
 * Its own file: the functions wire themselves once per process (see local-wall.test.ts).
 */
describe('gpu-reflex status, storm scenario', () => {
  it('shows the held nodes and their approval IDs, writing nothing', async () => {
    const result = await simulateScenario('storm.yaml', []);
    const sim = result.sim!;
    const aprIds = result.report.events
      .filter((e) => e.detailType === 'Approval Requested')
      .map((e) => String((e.detail as { approvalId: string }).approvalId));
    expect(aprIds).toHaveLength(2);
    // The stack closed its cluster's server at the end of the run: serve the same cluster again.
    await new Promise<void>((resolve) => sim.server.listen(0, '127.0.0.1', () => resolve()));
    try {
      const { port } = sim.server.address() as AddressInfo;
      const kubeconfig = join(mkdtempSync(join(tmpdir(), 'status-storm-')), 'kubeconfig');
      writeFileSync(kubeconfig, sim.kubeconfig().replaceAll(sim.url, `http://127.0.0.1:${port}`), { mode: 0o600 });
      const status = await commands.find((c) => c.path.join(' ') === 'status')!.load();
      const rvBefore = sim.store.resourceVersion;
      const objects = () =>
        ['nodes', 'configmaps', 'pods'].flatMap((r) =>
          sim.store
            .list(r)
            .map((o) => `${r}/${o.metadata.namespace ?? ''}/${o.metadata.name}@${o.metadata.resourceVersion}`),
        );
      const before = objects();

      const json: string[] = [];
      expect(
        await status.run(['--kubeconfig', kubeconfig, '--json'], { out: (l) => void json.push(l), err: () => {} }),
      ).toBe(0);
      const held = JSON.parse(json.join('\n')) as HeldNode[];
      expect(held.map((h) => `${h.node} ${h.state}`)).toEqual([
        expect.stringMatching(/^t4-0 (draining|awaiting-repair)$/),
        't4-1 awaiting-approval',
        't4-2 awaiting-approval',
      ]);
      expect(held.flatMap((h) => h.approvals.map((a) => a.id)).sort()).toEqual([...aprIds].sort());
      for (const h of held.slice(1)) expect(h.next).toBe(`gpu-reflex approve ${h.approvals[0]!.id}`);
      expect(held[0]!.incidents[0]!.why).toMatch(/XID 79/);

      const table: string[] = [];
      expect(await status.run(['--kubeconfig', kubeconfig], { out: (l) => void table.push(l), err: () => {} })).toBe(0);
      expect(table[0]).toMatch(/^NODE\s+STATE\s+GPU\s+WHY\s+SINCE\s+FENCE\s+APPROVAL\s+NEXT$/);
      for (const id of aprIds) expect(table.join('\n')).toContain(id);
      for (const n of ['t4-0', 't4-1', 't4-2']) expect(table.some((l) => l.startsWith(n))).toBe(true);

      // --watch: reads again after each wait until the wait says stop; the injected wait never sleeps.
      const waits: number[] = [];
      const watched: string[] = [];
      const watch = createStatusCommand(
        async (ms) => waits.push(ms) < 2,
        () => new Date('2026-01-01T00:10:00.000Z'),
      );
      expect(
        await watch.run(['--kubeconfig', kubeconfig, '--watch', '5'], {
          out: (l) => void watched.push(l),
          err: () => {},
        }),
      ).toBe(0);
      expect(waits).toEqual([5000, 5000]);
      expect(watched.filter((l) => l === '--- 2026-01-01T00:10:00.000Z')).toHaveLength(2);
      for (const id of aprIds) expect(watched.filter((l) => l.includes(id))).toHaveLength(2);

      expect(sim.store.resourceVersion).toBe(rvBefore);
      expect(objects()).toEqual(before);
    } finally {
      await sim.close();
    }
  }, 90_000);
});
