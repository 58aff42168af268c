import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { MIG_INVENTORY_ANNOTATION, readMigInventory } from '../../events/index.ts';
import { toNodeInfo, toPodInfo } from '../../functions/adapters/kube/convert.ts';
import { planMig } from '../../functions/mig/core/planner.ts';
import { readMigFleet } from '../../functions/mig/supply.ts';
import { parseScenario } from '../../infra/local/scenario.ts';
import { startStack } from '../../infra/local/stack.ts';

/**
 * The node agent tells the MIG planner which GPU holds which pod: on the embedded stack, the
 * agent's actuator writes the gpu-reflex.io/mig-inventory annotation from its (mock) NVML, and the
 * planner, reading only the Kubernetes objects, relays an idle GPU and none that runs a notebook.
 */
describe('the MIG inventory annotation on the embedded stack', () => {
  it('says which GPUs are busy, so the plan relays an idle one', async () => {
    const scenario = parseScenario(`name: mig-inventory
durationSeconds: 120
startAt: "2041-01-01T00:00:00Z"
fleet: ../../functions/mig/testdata/h100-mig.yaml
agents: { sampleIntervalMs: 60000 }
`, 'mig-inventory.yaml', new URL('.', import.meta.url).pathname);
    const lines: string[] = [];
    const { report } = await (await startStack(scenario, { clock: 'virtual', out: (l) => void lines.push(l) })).run();
    // The timeline says what the planner would do, from the same Node and Pod objects.
    expect(lines).toContainEqual(expect.stringMatching(/cluster\s+the MIG planner would relay h100-0 GPU 2: 7×1g\.10gb → 2×3g\.40gb, for 2 pending pods \(ml-train\/finetune-0, ml-train\/finetune-1\); applying a plan is not built yet$/));
    const node = report.final.nodes.find((n) => n.metadata.name === 'h100-0')!;
    const inv = readMigInventory(node.metadata.annotations ?? {}).inventory;
    expect(inv?.gpus.map((g) => g.instances.filter((i) => i.inUse).length)).toEqual([7, 3, 0, 0]);
    const fleet = readMigFleet(report.final.nodes.map((n) => toNodeInfo(n as unknown as V1Node)), report.final.pods.map((p) => toPodInfo(p as unknown as V1Pod)));
    expect(fleet.notes).toEqual([]);
    const plan = planMig(fleet.nodes, fleet.pending);
    expect(plan.changes.map((c) => `${c.node}/${c.gpu}: ${c.to.join(',')}`)).toEqual(['h100-0/2: 3g.40gb,3g.40gb']);
    expect(node.metadata.annotations?.[MIG_INVENTORY_ANNOTATION]).toBeDefined();
  }, 60_000);
});
