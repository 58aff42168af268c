/**
 * Chat's `quota show`: each team quota's hard values and what its namespace uses, as the ResourceQuota's status
 * says. A status the quota controller has not written yet (a quota just created, or the controller behind) is
 * unknown, not nothing used.
 */
import { describe, expect, it } from 'vitest';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock } from '../adapters/clock.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { QuotaConfigSchema } from '../quota/core/config.ts';
import type { CommandPorts } from './command-ports.ts';
import { quotaShow } from './quota-actions.ts';

function setup() {
  const clock = manualClock(Date.parse('2026-12-06T02:00:00.000Z'));
  const kube = fakeKube({ clock });
  const ports: CommandPorts = {
    kube,
    publisher: new RecordingPublisher(),
    notifier: new RecordingNotifier(),
    clock,
    logger: silentLogger,
    holder: 'test',
    dryRun: false,
  };
  const config = QuotaConfigSchema.parse({ teams: [{ name: 'ml', namespaces: ['ml'] }] });
  const put = (used: Record<string, string>) =>
    kube.cluster.quotas.set(`ml/${config.quotaName}`, {
      namespace: 'ml',
      name: config.quotaName,
      labels: {},
      annotations: {},
      hard: { 'requests.nvidia.com/gpu': '8', 'limits.nvidia.com/gpu': '8' },
      used,
      resourceVersion: '1',
    });
  return { put, show: () => quotaShow(ports, config) };
}

describe("chat's quota show", () => {
  it('says what a namespace uses where the quota status says it', async () => {
    const t = setup();
    t.put({ 'requests.nvidia.com/gpu': '6', 'limits.nvidia.com/gpu': '6' });
    expect(await t.show()).toBe('ml (ml): limits.nvidia.com/gpu 8 (used 6), requests.nvidia.com/gpu 8 (used 6)');
  });

  it('does not call a usage the quota controller has not reported "used 0"', async () => {
    const t = setup();
    // status.used not written yet for either key: the namespace may be using all 8 GPUs.
    t.put({ 'requests.nvidia.com/gpu': '6' });
    expect(await t.show()).toBe(
      'ml (ml): limits.nvidia.com/gpu 8 (used unknown: not in the quota status yet), requests.nvidia.com/gpu 8 (used 6)',
    );
  });
});
