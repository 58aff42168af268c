/**
 * The fleet's own PromQL over dcgm-exporter metrics, copied verbatim from the field notes (the
 * operators' runbooks the project was founded on) so the tests hold the agent's /metrics to them.
 * `note` is where each came from and what the operators meant by it.
 */
export interface FieldNoteQuery {
  query: string;
  note: string;
}

export const FIELD_NOTE_QUERIES: readonly FieldNoteQuery[] = [
  { query: 'count(DCGM_FI_DEV_DEC_UTIL)', note: 'GPU-cluster runbook, "common PromQL": total GPUs' },
  { query: 'DCGM_FI_DEV_DEC_UTIL{exported_namespace=""}', note: 'GPU-cluster runbook: idle GPUs (no pod on them)' },
  {
    query: 'count(DCGM_FI_DEV_DEC_UTIL{})by(exported_namespace)',
    note: 'GPU-cluster runbook: GPUs in use per namespace',
  },
  {
    query:
      'avg by (exported_namespace, deployment) (\n  label_replace(\n    DCGM_FI_DEV_GPU_UTIL{},\n    "deployment",\n    "$1",\n    "exported_pod",\n    "^(.*)-[^-]+-[^-]+$"\n  )\n)',
    note: 'GPU-cluster runbook: utilization per deployment (from the pod name)',
  },
  { query: 'DCGM_FI_DEV_GPU_UTIL > 90', note: 'operations guide, PrometheusRule GPUHighUtilization' },
  {
    query: 'DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_TOTAL > 0.95',
    note: 'operations guide, PrometheusRule GPUMemoryHigh',
  },
  { query: 'DCGM_FI_DEV_GPU_UTIL > 95', note: 'monitoring design, alert GPUHighUtilization' },
  { query: 'DCGM_FI_DEV_GPU_TEMP > 85', note: 'monitoring design, alert GPUHighTemperature' },
  // Used over free, as written in the notes (not over total): it still needs both series per GPU.
  { query: 'DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_FREE > 0.95', note: 'monitoring design, alert GPUMemoryAlmostFull' },
];
