import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULT,
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  GpuActionRequestsSchema,
  SCHEMA_VERSION,
  type GpuActionRequest,
  type GpuActionResultDetail,
  type GpuActionState,
} from '../../events/index.ts';
import { matchesPattern } from '../../events/pattern.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { ConflictError } from '../adapters/errors.ts';
import { dryRunPorts, type DryRunAction } from '../adapters/kube/dry-run.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import type { NodeChange } from '../adapters/kube/node-change.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { applyActions, type ActionPorts } from './apply.ts';
import { gpuAnswerHandler } from './gpu-answer-handler.ts';
import {
  carriedGpuActions,
  carriesGpuActions,
  isAnswerFor,
  mergeGpuActions,
  readGpuAnswers,
  type GpuAction,
  type GpuActionOwner,
  type GpuActionSet,
} from './gpu-actions.ts';
import { silentLogger } from '../adapters/logger.ts';
import { emptyEdit, noActions, type Actions } from './plan.ts';

/**
 * A second owner of GPU actions: remediation is the only one gpu-reflex has today (GPU_ACTION_OWNERS), and
 * the channel is built for the next (docs/architecture.md's thermal example). The wire takes any owner name.
 */
const THERMAL = 'thermal' as GpuActionOwner;
const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const G1 = 'GPU-11111111-0000-4000-8000-000000000000';
const AT = '2026-12-04T21:00:00.000Z';

const act = (id: string, action: GpuAction['action'], gpu = G0): GpuAction => ({
  id,
  gpu,
  action,
  incident: `n1/${gpu}/why`,
  requestedAt: AT,
  timeoutSeconds: 600,
});
const asking = (set: GpuActionSet): Actions => ({
  ...noActions(),
  nodeEdit: { ...emptyEdit('n1'), gpuActions: set },
});
const requests = (n: NodeInfo): GpuActionRequest[] =>
  GpuActionRequestsSchema.parse(JSON.parse(n.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]'));
const own = (rs: GpuActionRequest[]) => rs.map((r) => `${r.owner ?? 'remediate'} ${r.id} ${r.action}`);

function seeded() {
  const kube = fakeKube();
  kube.cluster.addNode({ name: 'n1' });
  const ports: ActionPorts = { nodes: kube.nodes, pods: kube.pods, notifier: new RecordingNotifier() };
  return { kube, ports };
}

describe('the GPU-action channel (functions/lib/gpu-actions.ts)', () => {
  it("keeps both owners' actions on one node through an apply, and withdraws only the owner's own", async () => {
    const { kube, ports } = seeded();
    await applyActions(asking({ owner: THERMAL, actions: [act('drain-on.1', 'drain-on', G1)] }), ports);
    await applyActions(
      asking({ owner: 'remediate', actions: [act('fence.a01', 'fence'), act('reset.a01', 'reset')] }),
      ports,
    );
    expect(own(requests(await kube.nodes.get('n1')))).toEqual([
      'remediate fence.a01 fence',
      'remediate reset.a01 reset',
      'thermal drain-on.1 drain-on',
    ]);
    // Remediation's reset done: its set shrinks; thermal's entry stays as thermal wrote it.
    await applyActions(asking({ owner: 'remediate', actions: [act('fence.a01', 'fence')] }), ports);
    expect(own(requests(await kube.nodes.get('n1')))).toEqual([
      'remediate fence.a01 fence',
      'thermal drain-on.1 drain-on',
    ]);
    await applyActions(asking({ owner: 'remediate', actions: [] }), ports);
    expect(own(requests(await kube.nodes.get('n1')))).toEqual(['thermal drain-on.1 drain-on']);
    await applyActions(asking({ owner: THERMAL, actions: [] }), ports);
    expect((await kube.nodes.get('n1')).annotations[GPU_ACTIONS_ANNOTATION]).toBeUndefined();
  });

  it("reads as already carrying an owner's set beside another owner's entries (nothing rewritten every pass)", async () => {
    const { kube, ports } = seeded();
    // Thermal's entry as another writer put it (its own key order): kept exactly as written.
    const other = { id: 'drain-on.1', action: 'drain-on', owner: 'thermal', gpuUuid: G1, incident: 'n1/x' };
    const written = { ...other, requestedAt: AT, timeoutSeconds: 600 };
    await kube.nodes.update('n1', { annotations: { [GPU_ACTIONS_ANNOTATION]: JSON.stringify([written]) } });
    const set: GpuActionSet = { owner: 'remediate', actions: [act('fence.a01', 'fence')] };
    await applyActions(asking(set), ports);
    const after = await kube.nodes.get('n1');
    expect(carriesGpuActions(after.annotations, set, 'n1')).toBe(true);
    expect(JSON.parse(after.annotations[GPU_ACTIONS_ANNOTATION]!)[1]).toEqual(written);
    expect(Object.keys(JSON.parse(after.annotations[GPU_ACTIONS_ANNOTATION]!)[1])).toEqual(Object.keys(written));
  });

  it('writes remediation-only requests exactly as before owners (no owner field, its own key order)', () => {
    const set: GpuActionSet = { owner: 'remediate', actions: [{ ...act('probe.a01', 'probe'), probeSeconds: 30 }] };
    expect(mergeGpuActions(undefined, set, 'n1')).toBe(
      JSON.stringify([
        {
          gpuUuid: G0,
          incident: `n1/${G0}/why`,
          timeoutSeconds: 600,
          id: 'probe.a01',
          action: 'probe',
          requestedAt: AT,
          probeSeconds: 30,
        },
      ]),
    );
  });

  it("reads and merges again when another owner wrote the node between the applier's read and its patch", async () => {
    const { kube, ports } = seeded();
    let raced = false;
    const nodes: ActionPorts['nodes'] = {
      update: (n, c, o) => kube.nodes.update(n, c, o),
      setCondition: (n, c) => kube.nodes.setCondition(n, c),
      get: async (n) => {
        const read = await kube.nodes.get(n);
        if (!raced) {
          raced = true; // thermal writes its request after our read: our patch against that read is a 409
          await applyActions(asking({ owner: THERMAL, actions: [act('drain-on.1', 'drain-on', G1)] }), ports);
        }
        return read;
      },
    };
    await applyActions(asking({ owner: 'remediate', actions: [act('fence.a01', 'fence')] }), { ...ports, nodes });
    expect(own(requests(await kube.nodes.get('n1')))).toEqual([
      'remediate fence.a01 fence',
      'thermal drain-on.1 drain-on',
    ]);
  });

  it("sends a caller's basis back as a 409 when the node changed since (its plan was made from that read)", async () => {
    const { kube, ports } = seeded();
    const basis = await kube.nodes.get('n1');
    await applyActions(asking({ owner: THERMAL, actions: [act('drain-on.1', 'drain-on', G1)] }), ports);
    await expect(
      applyActions(asking({ owner: 'remediate', actions: [act('fence.a01', 'fence')] }), ports, undefined, basis),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(own(requests(await kube.nodes.get('n1')))).toEqual(['thermal drain-on.1 drain-on']);
  });

  it('refuses a node edit that writes the request annotation itself (it would erase the other owners)', async () => {
    const { ports } = seeded();
    const edit = { ...emptyEdit('n1'), annotations: { [GPU_ACTIONS_ANNOTATION]: '[]' } };
    await expect(applyActions({ ...noActions(), nodeEdit: edit }, ports)).rejects.toThrow(/use NodeEdit.gpuActions/);
  });

  it('records, in a dry run, the merged annotation it would write, and writes nothing', async () => {
    const { kube, ports } = seeded();
    await applyActions(asking({ owner: THERMAL, actions: [act('drain-on.1', 'drain-on', G1)] }), ports);
    const before = (await kube.nodes.get('n1')).annotations[GPU_ACTIONS_ANNOTATION];
    const recorded: DryRunAction[] = [];
    const dry = dryRunPorts(kube, (a) => recorded.push(a));
    const set: GpuActionSet = { owner: 'remediate', actions: [act('fence.a01', 'fence')] };
    await applyActions(asking(set), { ...ports, nodes: dry.nodes });
    const update = recorded.find((a) => a.op === 'nodes.update');
    const written = (update?.args[1] as NodeChange | undefined)?.annotations?.[GPU_ACTIONS_ANNOTATION];
    expect(written).toBe(mergeGpuActions(before, set, 'n1'));
    expect(own(GpuActionRequestsSchema.parse(JSON.parse(written ?? '[]')))).toEqual([
      'remediate fence.a01 fence',
      'thermal drain-on.1 drain-on',
    ]);
    expect(update?.result).toBe(true);
    expect((await kube.nodes.get('n1')).annotations[GPU_ACTIONS_ANNOTATION]).toBe(before);
  });
});

describe("merging owners' sets, in any order (property)", () => {
  const owners = ['remediate', THERMAL] as const;
  const action = fc.record({
    id: fc.constantFrom('fence.0001', 'reset.0001', 'probe.0001', 'fence.0002'),
    gpu: fc.constantFrom(G0, G1),
    action: fc.constantFrom('fence', 'reset', 'probe', 'unfence', 'mig-cleanup'),
    incident: fc.constant('n1/why'),
    requestedAt: fc.constant(AT),
    timeoutSeconds: fc.integer({ min: 1, max: 3600 }),
  }) as fc.Arbitrary<GpuAction>;
  const step = fc.record({
    owner: fc.constantFrom(...owners),
    actions: fc.uniqueArray(action, { selector: (a) => a.id, maxLength: 4 }),
  });

  it('leaves each owner exactly its last set, whatever the others wrote in between, and reads as carrying it', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps) => {
        let raw: string | undefined;
        const last = new Map<string, GpuActionSet>();
        for (const set of steps) {
          raw = mergeGpuActions(raw, set, 'n1') ?? undefined;
          last.set(set.owner, set);
        }
        const annotations: Record<string, string> = raw === undefined ? {} : { [GPU_ACTIONS_ANNOTATION]: raw };
        if (raw !== undefined) GpuActionRequestsSchema.parse(JSON.parse(raw));
        for (const owner of owners) {
          const set = last.get(owner) ?? { owner, actions: [] };
          expect(carriedGpuActions(annotations, owner)).toEqual(set.actions);
          expect(carriesGpuActions(annotations, set, 'n1')).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("the agent's answers reach their owner only", () => {
  const state = (o: Partial<GpuActionState>): GpuActionState => ({
    state: 'done',
    action: 'reset',
    gpuUuid: G0,
    at: AT,
    ...o,
  });
  // Both owners asked under the same id: the agent keeps thermal's under `thermal:<id>` (gpuActionKey).
  const annotations = {
    [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify({
      'reset.same': state({ reason: 'for remediation' }),
      'thermal:reset.same': state({ state: 'failed', reason: 'for thermal', owner: 'thermal' }),
    }),
  };

  it('on the Node: each owner reads its own answers under its own ids', () => {
    expect(readGpuAnswers(annotations, 'remediate').results).toEqual({
      'reset.same': state({ reason: 'for remediation' }),
    });
    expect(readGpuAnswers(annotations, THERMAL).results).toEqual({
      'reset.same': state({ state: 'failed', reason: 'for thermal', owner: 'thermal' }),
    });
  });

  it("reads a running probe's recorded evidence (watch), and a running probe an older agent wrote without it", () => {
    const watch = { since: AT, eccBaseline: 3, xids: [79] };
    const running = state({ state: 'running', action: 'probe', reason: 'watching for 30 s' });
    const read = readGpuAnswers(
      { [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify({ 'probe.new': { ...running, watch }, 'probe.old': running }) },
      'remediate',
    );
    expect(read.warning).toBeUndefined();
    expect(read.results).toEqual({ 'probe.new': { ...running, watch }, 'probe.old': running });
  });

  const detail = (owner?: string): GpuActionResultDetail => ({
    schemaVersion: SCHEMA_VERSION,
    eventId: `gpu-action:n1:${owner ?? 'legacy'}:reset.same:done`,
    node: 'n1',
    observedAt: AT,
    requestId: 'reset.same',
    incident: 'n1/why',
    action: 'reset',
    gpuUuid: G0,
    state: 'done',
    dryRun: false,
    ...(owner ? { owner } : {}),
  });
  const envelope = (d: GpuActionResultDetail) => ({
    version: '0',
    id: '3d1f6c0a-2b7e-4c59-9a18-5e4f7b6c8d90',
    'detail-type': GPU_ACTION_RESULT,
    source: 'gpu-reflex.node-agent',
    account: '123456789012',
    time: AT,
    region: 'ap-southeast-1',
    resources: [],
    detail: d,
  });

  it("on the bus: remediation's rule matches its answers (owner absent or remediate), never another owner's", () => {
    const pattern: unknown = JSON.parse(
      readFileSync(new URL('../../events/patterns/gpu-action.json', import.meta.url), 'utf8'),
    );
    expect(matchesPattern(pattern, envelope(detail()))).toBe(true);
    expect(matchesPattern(pattern, envelope(detail('remediate')))).toBe(true);
    expect(matchesPattern(pattern, envelope(detail('thermal')))).toBe(false);
    expect([isAnswerFor(detail('thermal'), 'remediate'), isAnswerFor(detail(), 'remediate')]).toEqual([false, true]);
  });

  it("in the handler: an answer for another owner that reaches remediation's handler is acknowledged, never handled", async () => {
    const handled: string[] = [];
    const handler = gpuAnswerHandler({
      name: 'remediate-gpu-action',
      owner: 'remediate',
      logger: silentLogger,
      handle: async (e) => void handled.push(e.detail.owner ?? 'legacy'),
    });
    const run = (d: GpuActionResultDetail) => handler(envelope(d), {} as never);
    expect(await run(detail('thermal'))).toMatchObject({
      status: 'done',
      result: { ignored: /of thermal, not of remediate/ },
    });
    await run(detail());
    expect(handled).toEqual(['legacy']);
  });
});
