import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MOCK_NVML_SCENARIOS } from '../infra/local/mock-nvml/build.ts';
import { oneGpu } from '../test/support/mock-nvml.ts';
import { registerAgentMetrics } from './agent-metrics.ts';
import { DCGM_GPU_FIELDS, type PodName, type PodNames } from './dcgm.ts';
import { AgentHealth, startAgentHttp, type AgentHttpServer } from './http.ts';
import { Metrics } from './metrics.ts';
import { podUidOf, startAgent, type AgentFixture } from '../test/support/agent-fixture.ts';
import { FIELD_NOTE_QUERIES } from '../test/support/dcgm-field-notes.ts';
import { parseExposition, scrape, SERVICE_MONITOR_TARGET, type ParsedFamily } from '../test/support/prom-text.ts';
import { evalPromql, queryShape } from '../test/support/promql-lite.ts';

// The real agent on the mock NVML (real koffi binding, manual clock), /metrics served over HTTP on
// a port the OS picks, the text parsed as Prometheus would and the field notes' queries run on it.
let fx: AgentFixture | undefined;
let http: AgentHttpServer | undefined;
afterEach(async () => {
  await http?.close();
  await fx?.close();
  fx = undefined;
  http = undefined;
});

/** A stand-in for a node-local pod name source: knows some pods, not all. */
function podNames(byPid: Record<number, PodName>): PodNames {
  const byUid = new Map(Object.entries(byPid).map(([pid, n]) => [podUidOf(Number(pid)), n]));
  return { lookup: async (uids) => new Map(uids.flatMap((u) => (byUid.has(u) ? [[u, byUid.get(u)!] as const] : []))) };
}

const NAMED: Record<number, PodName> = {
  4100: { namespace: 'team-a', pod: 'trainer-7d9f8b6c5-x2kqp', container: 'main' },
  4101: { namespace: 'team-a', pod: 'trainer-7d9f8b6c5-q8wzl', container: 'main' },
  4102: { namespace: 'team-b', pod: 'infer-5c6d7f8b9-abcde', container: 'server' },
  4103: { namespace: 'team-b', pod: 'infer-5c6d7f8b9-fghij' },
};

async function agentWithMetrics(scenario: string | object, pids: number[], names?: PodNames) {
  const registry = new Metrics();
  fx = await startAgent(scenario, {
    pids,
    overrides: {
      metrics: registerAgentMetrics(registry, { hostname: 'gpu-node-1', ...(names ? { podNames: names } : {}) }),
    },
  });
  http = await startAgentHttp({
    port: 0,
    host: '127.0.0.1',
    metrics: registry,
    health: new AgentHealth(),
    publisherStatus: () => ({ lastPublishAt: null, spooledEvents: 0 }),
  });
  const port = http.port;
  return { fx, scrapeText: async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text() };
}

const dcgm = (families: Map<string, ParsedFamily>) => [...families.keys()].filter((n) => n.startsWith('DCGM_'));
const byGpu = (f: ParsedFamily | undefined) =>
  Object.fromEntries((f?.series ?? []).map((s) => [s.labels.gpu, s.value]));

describe('DCGM-compatible metrics on /metrics', () => {
  it('exports HBM temperature (field 82) as DCGM_FI_DEV_MEMORY_TEMP where the GPU reports it (the real H200 did)', async () => {
    const a = await agentWithMetrics('h200-1x.json', [], podNames({}));
    await a.fx.agent.sampleOnce();
    const families = parseExposition(await a.scrapeText());
    expect(families.get('DCGM_FI_DEV_MEMORY_TEMP')).toMatchObject({ type: 'gauge' });
    expect(byGpu(families.get('DCGM_FI_DEV_MEMORY_TEMP'))).toEqual({ 0: 43 });
  });

  it('exports the NVLink error totals as counters where the GPU has NVLink', async () => {
    const h200 = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'h200-1x.json'), 'utf8')) as {
      gpus: Record<string, unknown>[];
    };
    h200.gpus[0]!.nvlinkErrors = { crcFlit: 7, crcData: 1, replay: 2, recovery: 0 };
    const a = await agentWithMetrics(h200, [], podNames({}));
    await a.fx.agent.sampleOnce();
    const families = parseExposition(await a.scrapeText());
    expect(families.get('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL')).toMatchObject({ type: 'counter' });
    expect(byGpu(families.get('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL'))).toEqual({ 0: 7 });
    expect(byGpu(families.get('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL'))).toEqual({ 0: 2 });
  });

  it('exports each GPU reading under dcgm-exporter names, types, units and labels', async () => {
    const a = await agentWithMetrics('dgx-a100-8x.json', [4100, 4101, 4102, 4103, 4104, 4105], podNames(NAMED));
    await a.fx.agent.sampleOnce();
    const families = parseExposition(await a.scrapeText());
    // Types as dcgm-exporter's counters CSV declares them (written out here, not read from our table).
    const types = Object.fromEntries(dcgm(families).map((n) => [n, families.get(n)!.type]));
    expect(types).toEqual({
      DCGM_FI_DEV_GPU_UTIL: 'gauge',
      DCGM_FI_DEV_MEM_COPY_UTIL: 'gauge',
      DCGM_FI_DEV_DEC_UTIL: 'gauge',
      DCGM_FI_DEV_FB_USED: 'gauge',
      DCGM_FI_DEV_FB_FREE: 'gauge',
      DCGM_FI_DEV_FB_TOTAL: 'gauge',
      DCGM_FI_DEV_GPU_TEMP: 'gauge',
      DCGM_FI_DEV_POWER_USAGE: 'gauge',
      DCGM_FI_DEV_ENFORCED_POWER_LIMIT: 'gauge',
      DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: 'counter',
      DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: 'counter',
      DCGM_FI_DEV_ECC_SBE_AGG_TOTAL: 'counter',
      DCGM_FI_DEV_ECC_DBE_AGG_TOTAL: 'counter',
      DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS: 'counter',
      DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS: 'counter',
      DCGM_FI_DEV_ROW_REMAP_FAILURE: 'gauge',
      DCGM_FI_DEV_ROW_REMAP_PENDING: 'gauge',
    });
    // The A100 scenario reports no HBM temperature, no encoder (an A100 has NVDECs only) and no
    // NVLink error totals (absent, never 0);
    // the tests below read them where the GPU reports them.
    const notInThisScenario = [
      'DCGM_FI_DEV_ENC_UTIL',
      'DCGM_FI_DEV_MEMORY_TEMP',
      'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
      'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
      'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL',
      'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL',
    ];
    expect(DCGM_GPU_FIELDS.map((f) => f.name).sort()).toEqual([...Object.keys(types), ...notInThisScenario].sort());
    expect(families.get('DCGM_FI_DEV_GPU_UTIL')?.help).toBe('GPU utilization (in %).');
    // Values as the scenario's series give them at t=0 (util) and as NVML reports memory (MiB), °C, W.
    expect(byGpu(families.get('DCGM_FI_DEV_GPU_UTIL'))).toEqual({
      0: 92,
      1: 95,
      2: 97,
      3: 92,
      4: 95,
      5: 97,
      6: 92,
      7: 95,
    });
    expect(byGpu(families.get('DCGM_FI_DEV_FB_USED'))['3']).toBe(70124);
    expect(byGpu(families.get('DCGM_FI_DEV_FB_TOTAL'))['3']).toBe(81920);
    expect(byGpu(families.get('DCGM_FI_DEV_FB_FREE'))['3']).toBe(81920 - 70124);
    expect(byGpu(families.get('DCGM_FI_DEV_GPU_TEMP'))['3']).toBe(61);
    expect(byGpu(families.get('DCGM_FI_DEV_POWER_USAGE'))['3']).toBe(312);
    expect(byGpu(families.get('DCGM_FI_DEV_ENFORCED_POWER_LIMIT'))['3']).toBe(400);
    expect(byGpu(families.get('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL'))['3']).toBe(0);
    const gpu0 = families.get('DCGM_FI_DEV_GPU_TEMP')!.series.find((s) => s.labels.gpu === '0')!;
    expect(gpu0.labels).toEqual({
      gpu: '0',
      UUID: a.fx.agent.source.byIndex(0)!.uuid,
      pci_bus_id: a.fx.agent.source.byIndex(0)!.pciBusId,
      device: 'nvidia0',
      modelName: 'NVIDIA A100-SXM4-80GB',
      Hostname: 'gpu-node-1',
      DCGM_FI_DRIVER_VERSION: '550.54.15',
      namespace: 'team-a',
      pod: 'trainer-7d9f8b6c5-x2kqp',
      container: 'main',
      pod_uid: podUidOf(4100),
    });
    // A pod the name source does not know: its UID, and no invented namespace or name.
    const gpu4 = families.get('DCGM_FI_DEV_GPU_TEMP')!.series.find((s) => s.labels.gpu === '4')!;
    expect(gpu4.labels).toMatchObject({ pod_uid: podUidOf(4104) });
    expect(Object.keys(gpu4.labels)).not.toContain('namespace');
    // A process outside Kubernetes (GPU 6): no pod labels at all.
    expect(
      Object.keys(families.get('DCGM_FI_DEV_GPU_TEMP')!.series.find((s) => s.labels.gpu === '6')!.labels),
    ).not.toContain('pod_uid');
  });

  it('runs every field-note query: each label it selects or groups by exists after Prometheus renames namespace/pod', async () => {
    const a = await agentWithMetrics('dgx-a100-8x.json', [4100, 4101, 4102, 4103], podNames(NAMED));
    await a.fx.agent.sampleOnce();
    const families = parseExposition(await a.scrapeText());
    const series = scrape(families, SERVICE_MONITOR_TARGET);
    const exported = new Set(dcgm(families));
    // Decoder utilization is read (the field notes count GPUs with it): its queries run as written.
    expect(exported.has('DCGM_FI_DEV_DEC_UTIL')).toBe(true);
    const runs = FIELD_NOTE_QUERIES.map(({ query }) => query);
    for (const query of runs) {
      const shape = queryShape(query);
      for (const m of shape.metrics) expect(exported, `${query}: ${m}`).toContain(m);
      // On a GPU a named pod uses, every label the query reads is there (after the renaming).
      for (const m of shape.metrics) {
        const used = series.filter((s) => s.labels.__name__ === m && s.labels.exported_namespace !== undefined);
        expect(used.length, `${query}: ${m} on a used GPU`).toBeGreaterThan(0);
        for (const s of used)
          for (const l of shape.labels.filter((x) => x !== 'deployment'))
            expect(Object.keys(s.labels), `${query}: ${m} ${l}`).toContain(l);
      }
      expect(() => evalPromql(query, series), query).not.toThrow();
    }
    // What the operators meant, answered right:
    const sorted = (v: { labels: Record<string, string>; value: number }[]) =>
      v.map((s) => [s.labels.exported_namespace ?? '', s.value]).sort();
    expect(evalPromql('count(DCGM_FI_DEV_GPU_UTIL)', series)[0]?.value).toBe(8);
    expect(
      evalPromql('DCGM_FI_DEV_GPU_UTIL{exported_namespace=""}', series)
        .map((s) => s.labels.gpu)
        .sort(),
    ).toEqual(['4', '5', '6', '7']);
    expect(sorted(evalPromql('count(DCGM_FI_DEV_GPU_UTIL{})by(exported_namespace)', series))).toEqual([
      ['', 4],
      ['team-a', 2],
      ['team-b', 2],
    ]);
    const perDeployment = evalPromql(FIELD_NOTE_QUERIES[3]!.query, series).map((s) => [
      s.labels.exported_namespace ?? '',
      s.labels.deployment ?? '',
      s.value,
    ]);
    expect(perDeployment).toEqual(
      expect.arrayContaining([
        ['team-a', 'trainer', 93.5],
        ['team-b', 'infer', 94.5],
      ]),
    );
    expect(evalPromql('DCGM_FI_DEV_GPU_UTIL > 90', series)).toHaveLength(8);
    // FB_TOTAL stands beside every FB_USED: the ratio has one answer per FB_USED series.
    expect(evalPromql('DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_TOTAL', series)).toHaveLength(
      evalPromql('DCGM_FI_DEV_FB_USED', series).length,
    );
    expect(evalPromql('DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_TOTAL > 0.95', series)).toEqual([]);
    // The target's own labels stay the agent's: the GPU's pod moved to exported_pod.
    expect(
      series.find((s) => s.labels.__name__ === 'DCGM_FI_DEV_GPU_UTIL' && s.labels.gpu === '0')?.labels,
    ).toMatchObject({
      pod: SERVICE_MONITOR_TARGET.pod,
      exported_pod: 'trainer-7d9f8b6c5-x2kqp',
      exported_container: 'main',
    });
  });

  it('leaves out what NVML did not supply instead of exporting 0', async () => {
    const a = await agentWithMetrics(
      oneGpu({ unsupported: ['utilization', 'temperature', 'power', 'ecc', 'remappedRows'] }),
      [],
    );
    await a.fx.agent.sampleOnce();
    const names = dcgm(parseExposition(await a.scrapeText()));
    expect(names).toEqual(
      expect.arrayContaining([
        'DCGM_FI_DEV_FB_USED',
        'DCGM_FI_DEV_FB_FREE',
        'DCGM_FI_DEV_FB_TOTAL',
        'DCGM_FI_DEV_ENFORCED_POWER_LIMIT',
      ]),
    );
    for (const absent of [
      'DCGM_FI_DEV_GPU_UTIL',
      'DCGM_FI_DEV_MEM_COPY_UTIL',
      'DCGM_FI_DEV_GPU_TEMP',
      'DCGM_FI_DEV_POWER_USAGE',
      'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
      'DCGM_FI_DEV_ROW_REMAP_FAILURE',
      'DCGM_FI_DEV_XID_ERRORS',
    ]) {
      expect(names, absent).not.toContain(absent);
    }
  });

  it('XID_ERRORS is the last XID code the agent published for that GPU, absent before the first', async () => {
    const a = await agentWithMetrics('dgx-a100-8x.json', []);
    await a.fx.agent.sampleOnce();
    expect(parseExposition(await a.scrapeText()).has('DCGM_FI_DEV_XID_ERRORS')).toBe(false);
    a.fx.mock.injectXid(5, 79);
    await a.fx.agent.pollEventsOnce(0);
    a.fx.advance(20_000); // past the NVML/kernel-log dedupe window: a new occurrence
    a.fx.agent.onKernelLine('[ 9000.1] NVRM: Xid (PCI:0000:4e:00): 31, pid=4103, name=python, Ch 00000008');
    const xid = parseExposition(await a.scrapeText()).get('DCGM_FI_DEV_XID_ERRORS');
    expect(xid?.type).toBe('gauge');
    expect(byGpu(xid)).toEqual({ 5: 79, 3: 31 });
  });

  it("drops a lost GPU's readings at the next sample (its last XID stays)", async () => {
    const a = await agentWithMetrics('dgx-a100-8x.json', []);
    await a.fx.agent.sampleOnce();
    a.fx.mock.injectXid(5, 79);
    await a.fx.agent.pollEventsOnce(0);
    a.fx.mock.injectFault({ kind: 'gpuLost', gpu: 5 });
    a.fx.advance(1000);
    await a.fx.agent.sampleOnce();
    const families = parseExposition(await a.scrapeText());
    expect(Object.keys(byGpu(families.get('DCGM_FI_DEV_GPU_TEMP')))).not.toContain('5');
    expect(byGpu(families.get('DCGM_FI_DEV_XID_ERRORS'))).toEqual({ 5: 79 });
  });

  it("exports framebuffer per MIG instance with GPU_I_PROFILE and GPU_I_ID and that instance's pod; GPU-wide series name no pod", async () => {
    const names = podNames({
      2201: { namespace: 'team-a', pod: 'small-0', container: 'main' },
      2202: { namespace: 'team-b', pod: 'small-1' },
      2301: { namespace: 'team-c', pod: 'big-0' },
    });
    const a = await agentWithMetrics('h100-mig.json', [2201, 2202, 2301], names);
    await a.fx.agent.sampleOnce();
    const families = parseExposition(await a.scrapeText());
    const fb = families.get('DCGM_FI_DEV_FB_USED')!.series;
    const instances = fb
      .filter((s) => s.labels.GPU_I_ID !== undefined)
      .map((s) => [s.labels.gpu, s.labels.GPU_I_ID, s.labels.GPU_I_PROFILE, s.labels.pod ?? '']);
    expect(instances).toEqual(
      expect.arrayContaining([
        ['0', '7', '1g.10gb', 'small-0'],
        ['0', '8', '1g.10gb', ''],
        ['0', '9', '1g.10gb', 'small-1'],
        ['1', '2', '3g.40gb', 'big-0'],
        ['1', '3', '2g.20gb', ''],
      ]),
    );
    expect(instances).toHaveLength(7 + 3);
    const wholeGpu = families.get('DCGM_FI_DEV_GPU_TEMP')!.series;
    expect(wholeGpu.map((s) => s.labels.gpu).sort()).toEqual(['0', '1']);
    for (const s of wholeGpu) expect(Object.keys(s.labels)).not.toContain('pod_uid');
  });
});

describe('/metrics as the agent served it on a real H200 (driver 580.159.04, test/fixtures/real-driver)', () => {
  const text = readFileSync(
    join(
      import.meta.dirname,
      '..',
      'test',
      'fixtures',
      'real-driver',
      'h200-580.159.04',
      'metrics-dcgm-after-xid31.txt',
    ),
    'utf8',
  );

  it("parses strictly as Prometheus text, with dcgm-exporter's label keys and the readings the driver gave", () => {
    const families = parseExposition(text);
    const temp = families.get('DCGM_FI_DEV_GPU_TEMP')!.series[0]!;
    expect(Object.keys(temp.labels).sort()).toEqual([
      'DCGM_FI_DRIVER_VERSION',
      'Hostname',
      'UUID',
      'device',
      'gpu',
      'modelName',
      'pci_bus_id',
    ]);
    expect(temp.labels).toMatchObject({
      gpu: '0',
      device: 'nvidia0',
      modelName: 'NVIDIA H200',
      DCGM_FI_DRIVER_VERSION: '580.159.04',
    });
    expect(families.get('DCGM_FI_DEV_XID_ERRORS')!.series[0]!.value).toBe(31);
    expect(families.get('DCGM_FI_DEV_FB_TOTAL')!.series[0]!.value).toBe(143771);
    // What the one-GPU VM does not have is absent, never a zero: no NVLink counters.
    expect(families.has('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL')).toBe(false);
  });

  it("answers the field notes' queries after a ServiceMonitor scrape", () => {
    const series = scrape(parseExposition(text), SERVICE_MONITOR_TARGET);
    for (const { query } of FIELD_NOTE_QUERIES.filter((q) => !q.query.includes('DCGM_FI_DEV_DEC_UTIL')))
      expect(() => evalPromql(query, series), query).not.toThrow();
    expect(evalPromql('DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_TOTAL > 0.95', series)).toEqual([]);
  });
});
