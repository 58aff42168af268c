import { writeFileSync } from 'node:fs';
import type { StackBus } from './bus/alibaba-bus.ts';
import { pendingByResource, type ClusterObserver } from './cluster-observer.ts';
import type { DevicePluginStandIn } from './device-plugin.ts';
import type { GpuOperatorClients } from './gpu-operator.ts';
import type { KubeSim } from './kube/index.ts';
import type { Node, Pod } from './kube/types.ts';
import { checkExpectations, summarize, type StackReport } from './report.ts';
import { reportHtml } from './report-html.ts';
import type { Scenario, TimelineStep } from './scenario.ts';
import type { StackAgents } from './stack-agents.ts';
import { gapNotice } from './stack-env.ts';
import type { StackKube } from './stack-kube.ts';
import type { StackNodes } from './stack-nodes.ts';
import type { StackRecorder } from './stack-recorder.ts';
import type { ScenarioSteps } from './stack-steps.ts';
import type { StackOptions, StackResult } from './stack-types.ts';
import { formatSummary, runningText, verdictLine, type TimelineEntry } from './timeline.ts';

/** How much earlier than its NVML is due a fault step runs on the wall clock (see run()). */
const WALL_FAULT_MARGIN_MS = 500;

/** How long after a scenario step time keeps moving in fine steps before quiet steps may start. */
const SETTLE_MS = 30_000;

/** What a started stack runs on (stack.ts). */
export interface StackRunContext {
  scenario: Scenario;
  o: StackOptions;
  virtual: boolean;
  wallStart: number;
  sim: KubeSim | undefined;
  kube: StackKube;
  bus: StackBus;
  /** The function keys of the routing table. */
  functions: ReadonlySet<string>;
  rec: StackRecorder;
  observer: ClusterObserver | undefined;
  agents: StackAgents;
  agentNodes: StackNodes;
  steps: ScenarioSteps;
  devicePlugin: DevicePluginStandIn | undefined;
  operatorClients: GpuOperatorClients | undefined;
  /** The cluster when the agents started. */
  nodes: Node[];
  initialPods: Pod[];
  progress: (s: string) => void;
  sinceStart: () => number;
  stopped: () => boolean;
  cleanup: () => Promise<void>;
}

/**
 * Runs the scenario to its end (or until stopped): steps the clock, carries out the timeline's steps as
 * they fall due, lets the agents, the device plugins and the bus catch up each step; then writes the
 * report and shuts everything down.
 */
export async function runScenario(c: StackRunContext): Promise<StackResult> {
  const { scenario, o, virtual, wallStart, sim, kube, bus, functions, rec, observer } = c;
  const { agents, agentNodes, steps: scenarioSteps, devicePlugin, operatorClients, nodes, initialPods } = c;
  const { progress, sinceStart } = c;
  const emit = (e: Omit<TimelineEntry, 'atMs'>) => rec.emit(e);
  const flushEvents = () => rec.flushEvents();
  const duration = o.durationMs ?? scenario.durationSeconds * 1000;
  const stepMs = o.stepMs ?? 100;
  let lastPending = '';
  const checkPending = async () => {
    // Only unbound pods can be pending: the store's spec.nodeName index has them (not every pod, every step).
    const pods = sim
      ? (sim.store.select('pods', { fields: [{ field: 'spec.nodeName', equal: true, value: '' }] }) as Pod[])
      : await kube.pods();
    const pending = pendingByResource(pods);
    const key = JSON.stringify(pending);
    if (key === lastPending) return;
    lastPending = key;
    for (const [resource, n] of Object.entries(pending))
      emit({
        who: 'cluster',
        kind: 'gap',
        what: '',
        text:
          `${n} pod${n === 1 ? '' : 's'} pending ` +
          `on ${resource}` +
          `${gapNotice(resource, functions, Object.keys(scenario.autoscaleFile?.policy.pools ?? {}).length)}`,
      });
  };

  let met = false;
  const expectationsHold = async (expect: NonNullable<Scenario['expect']>) => {
    const [ns, ps] = await Promise.all([kube.nodes(), kube.pods()]);
    return checkExpectations(expect, ns, ps, rec.tally).every((c) => c.ok);
  };

  // A fault is due when the node's NVML fires it (its mock clock may run ahead, see StackAgents).
  // On the wall clock a child agent's NVML fires the fault on its own clock, whose start the
  // stack only estimates (leadMs): the step (its inject line) runs a margin early, so the cause
  // is printed before the XID it causes; its kernel-log line still waits for the NVML time.
  const margin = virtual ? 0 : WALL_FAULT_MARGIN_MS;
  const dueAt = (s: TimelineStep) => ('fault' in s ? Math.max(0, s.at - agents.leadMs(s.node) - margin) : s.at);
  const steps = [...scenario.timeline].sort((a, b) => dueAt(a) - dueAt(b));
  let next = 0;
  let lastWall = Date.now();
  let lastPendingCheck = -Infinity;
  try {
    progress(runningText(duration, o.clock));
    let t = 0;
    let lastStepAt = 0;
    const quietStepMs = o.quietStepMs ?? scenario.agents.sampleIntervalMs;
    for (; !c.stopped() && t < duration;) {
      let dt = stepMs;
      if (virtual && quietStepMs > stepMs && t - lastStepAt >= SETTLE_MS) {
        // Quiet: nothing happened for a while. Move to the next scenario step (or the end)
        // in steps of at most quietStepMs; timers falling due on the way fire at their times.
        const nextDue = next < steps.length ? dueAt(steps[next]!) : duration;
        dt = Math.max(stepMs, Math.min(quietStepMs, nextDue - t));
      }
      if (!virtual) {
        await new Promise((r) => setTimeout(r, stepMs));
        const now = Date.now();
        dt = now - lastWall;
        lastWall = now;
      }
      t += dt;
      // The bus moves the one clock, firing the agents' timers and its schedules on the way.
      if (virtual) await bus.advance(dt);
      sim?.tick();
      // A fault due in this step: its kernel-log line is written now; the mock fires the NVML
      // side by itself when the node's step moves its clock past `atMs`.
      while (next < steps.length && dueAt(steps[next]!) <= t) {
        await scenarioSteps.run(steps[next++]!);
        lastStepAt = t;
      }
      await scenarioSteps.retryRefused();
      await agentNodes.startJoinedAgents(agents);
      scenarioSteps.writeKernelLines(t);
      agentNodes.syncProcesses();
      operatorClients?.sync();
      await agents.step(dt);
      devicePlugin?.sync();
      await agents.whenIdle();
      await bus.drain();
      // The functions may have changed what a DRA plugin reads (a rule deleted): the kubelet
      // and the scheduler see it now, not at the next step (which may be a minute away). The
      // other plugins read node-local files or NVML, which only the step above changes.
      if (devicePlugin && devicePlugin.sync('dra').length > 0) sim?.tick();
      flushEvents();
      if (t - lastPendingCheck >= 1000) {
        lastPendingCheck = t;
        await checkPending();
        if (scenario.endWhenMet && scenario.expect && (await expectationsHold(scenario.expect))) {
          met = true;
          progress(`expect: every check holds at ${(t / 1000).toFixed(1)}s; the run ends here (endWhenMet)`);
          break;
        }
      }
    }
    await agents.close();
    await bus.drain();
    flushEvents();
    const [finalNodes, finalPods] = await Promise.all([kube.nodes(), kube.pods()]);
    const summary = summarize({
      tally: rec.tally,
      deadLetters: bus.counts.deadLetters,
      counters: observer?.counters ?? { evicted: [], rescheduled: [] },
      observed: observer !== undefined,
      nodes: finalNodes,
      pods: finalPods,
    });
    // The checks describe the scenario's end state: a run stopped or cut short before it is not judged.
    const complete = met || t >= scenario.durationSeconds * 1000;
    if (scenario.expect && complete)
      summary.expectations = checkExpectations(scenario.expect, finalNodes, finalPods, rec.tally);
    else if (scenario.expect)
      progress(
        `expect: not checked, the run ended at ${(t / 1000).toFixed(1)}s, before the scenario's end ` +
          `(${scenario.durationSeconds}s)`,
      );
    for (const l of formatSummary(summary)) o.out(l);
    const report: StackReport = {
      scenario: {
        name: scenario.name,
        description: scenario.description,
        source: scenario.source,
        durationSeconds: sinceStart() / 1000,
      },
      clock: o.clock,
      cluster: sim ? 'simulated' : 'kubeconfig',
      wallMs: Date.now() - wallStart,
      events: rec.events,
      deliveries: rec.deliveries,
      deadLetters: [...bus.deadLetters],
      actions: rec.events
        .filter((e) => e.source === 'gpu-reflex.functions')
        .map((e) => ({ atMs: e.atMs, detailType: e.detailType, detail: e.detail as Record<string, unknown> })),
      evicted: observer?.counters.evicted ?? [],
      rescheduled: observer?.counters.rescheduled ?? [],
      timeline: rec.entries,
      dropped: { ...rec.dropped(), deadLetters: bus.counts.deadLetters - bus.deadLetters.length },
      initial: { nodes, pods: initialPods },
      final: { nodes: finalNodes, pods: finalPods },
      summary,
    };
    if (o.reportPath) {
      // `.html`: the page a person looks at (report-html.ts); anything else: the JSON report.
      writeFileSync(
        o.reportPath,
        /\.html?$/i.test(o.reportPath) ? reportHtml(report) : JSON.stringify(report, null, 2),
      );
      progress(`report written to ${o.reportPath}`);
    }
    o.out(verdictLine(summary));
    const failedChecks = (summary.expectations ?? []).filter((x) => !x.ok).length;
    return { report, sim, exitCode: failedChecks > 0 ? 1 : 0 };
  } finally {
    await c.cleanup();
  }
}
