import { parseScenario, type Scenario } from '../../infra/local/scenario.ts';

/** One hour, two T4 nodes, XID 79 on t4-0 at 2 min, endWhenMet with the given expect lines. */
export const endWhenMetScenario = (expect: string): Scenario =>
  parseScenario(
    `name: end-when-met
durationSeconds: 3600
startAt: "2041-01-01T00:00:00Z"
endWhenMet: true
fleet:
  nodes:
    - { name: t4, count: 2, labels: { nvidia.com/gpu.product: Tesla-T4, nvidia.com/gpu.count: "1", gpu-reflex.io/pool: t4 }, allocatable: { cpu: "8", memory: 32Gi, nvidia.com/gpu: 1 } }
  namespaces: [{ name: gpu-reflex }]
agents: { sampleIntervalMs: 60000 }
timeline:
  - { at: 2m, node: t4-0, gpu: 0, fault: { kind: xid, xid: 79 } }
expect:
${expect}
`,
    'end-when-met.yaml',
  );
