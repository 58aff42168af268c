import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseScenario } from '../../infra/local/scenario.ts';
import { startStack } from '../../infra/local/stack.ts';

/**
 * Honesty when a function is not there: serverless.yml routes XIDs to a handler module that does
 * not exist. The timeline must say the function is not available and show no action; the
 * cluster must be untouched. (The repository's serverless.yml has its handlers, so a fixture.)
 */
describe('a rule whose handler module is missing', () => {
  it('is shown as not available, once, and nothing is acted on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'local-missing-'));
    const yml = join(dir, 'serverless.yml');
    writeFileSync(
      yml,
      `service: t
provider: { name: aws, runtime: nodejs22.x }
functions:
  remediate:
    handler: not-written-yet/handler.handler
    events:
      - eventBridge:
          eventBus: gpu-reflex-dev
          pattern: { source: [gpu-reflex.node-agent], detail-type: [GPU XID Error] }
`,
    );
    const scenario = parseScenario(`name: t
durationSeconds: 3
fleet:
  nodes:
    - { name: t4, count: 1, labels: { nvidia.com/gpu.product: Tesla-T4, nvidia.com/gpu.count: "1" }, allocatable: { cpu: "8", memory: 32Gi, nvidia.com/gpu: 1 } }
  namespaces: [{ name: ml }]
  pods:
    - { name: serve, namespace: ml, requests: { nvidia.com/gpu: 1 } }
timeline:
  - { at: 1s, node: t4-0, gpu: 0, fault: { kind: xid, xid: 79 } }
  - { at: 2s, node: t4-0, gpu: 0, fault: { kind: xid, xid: 79 } }
`);
    const lines: string[] = [];
    const { report } = await (
      await startStack(scenario, { clock: 'virtual', out: (l) => lines.push(l), serverlessYml: yml })
    ).run();
    expect(report.events.filter((e) => e.detailType === 'GPU XID Error')).toHaveLength(2);
    const failed = report.deliveries.filter((d) => !d.ok);
    expect(failed).toHaveLength(2);
    expect(failed.every((d) => d.function === 'remediate' && d.errorName === 'HandlerLoadError')).toBe(true);
    expect(report.deadLetters.map((d) => d.reason)).toEqual(['not-retryable', 'not-retryable']);
    const said = report.timeline.filter((t) => t.who === 'remediate');
    expect(said).toHaveLength(1);
    expect(said[0]!.text).toMatch(/^not available yet \(.*not-written-yet\/handler.*\): the event was not acted on$/);
    expect(report.actions).toEqual([]);
    expect(report.final.nodes[0]!.spec?.unschedulable).toBeFalsy();
    expect(report.summary.deliveryFailures).toEqual({ remediate: 2 });
  }, 30_000);
});
