/**
 * One `Device Plugin Mismatch` handled on the reflex skeleton (lib/reflex.ts), under the node's remediation
 * lease (its annotations are shared with remediation's state and outbox): read the node and its pods, plan
 * (core/plugin-health.ts, pure), record the `Device Plugin Action` with the node change, apply, publish.
 * No RBAC beyond remediation's: the plugin's pod leaves through the Eviction API (pods/eviction create), the
 * node is patched (nodes patch), as for a fault.
 */
import { DEVICE_PLUGIN_ACTION, SOURCES, type DevicePluginMismatchDetail } from '../../events/index.ts';
import type { PublishedEvent } from '../adapters/bus.ts';
import { readOutbox } from '../lib/outbox.ts';
import { carryOut } from '../lib/reflex.ts';
import { withLease } from '../lib/lease.ts';
import { planPluginHealth, type PluginPlan } from './core/plugin-health.ts';
import { podsOf, stateOf } from './facts.ts';
import { nodeLease, SWEPT, type RemediationDeps } from './run.ts';

export async function remediatePlugin(
  event: DevicePluginMismatchDetail,
  deps: RemediationDeps,
): Promise<PluginPlan & { published: boolean }> {
  return withLease(nodeLease(event.node), 60, deps, async () => {
    const [info, pods] = await Promise.all([deps.nodes.get(event.node), podsOf(deps.pods, event.node)]);
    const now = new Date(deps.clock.now());
    const plan = planPluginHealth(
      { now, event, node: info, pods, state: stateOf(info, deps.policy.taintKey) },
      deps.policy,
    );
    const pending = readOutbox(info.annotations);
    if (plan.step === 'none') {
      deps.logger.info('device plugin', { node: event.node, state: event.state, reason: plan.reason });
      // Nothing new, but what an earlier invocation recorded and never got out (a refused publish) goes now.
      if (pending.events.length > 0 || pending.notices.length > 0)
        await carryOut({ node: event.node, pending, actions: plan.actions, events: () => [], basis: info }, deps);
      return { ...plan, published: false };
    }
    const { published } = await carryOut(
      {
        node: event.node,
        pending,
        actions: plan.actions,
        events: () => [actionEvent(event, plan, now)],
        basis: info,
        // A refused publish leaves the action in the outbox where remediation's sweep finds the node (the state
        // label is written with it): not this invocation's failure, whose retry would find the step recorded
        // and decide nothing.
        sweptBy: SWEPT,
      },
      deps,
    );
    deps.logger.info('device plugin', { node: event.node, step: plan.step, pods: plan.pods, reason: plan.reason });
    return { ...plan, published: published.length > 0 };
  });
}

/** The `Device Plugin Action` a step publishes: one per mismatch event and step (same id on a retry). */
function actionEvent(e: DevicePluginMismatchDetail, plan: PluginPlan, now: Date): PublishedEvent {
  return {
    source: SOURCES.functions,
    detailType: DEVICE_PLUGIN_ACTION,
    detail: {
      schemaVersion: 1,
      eventId: `device-plugin:${e.node}:${plan.step}:${Date.parse(e.observedAt)}`,
      occurredAt: now.toISOString(),
      node: e.node,
      step: plan.step,
      reason: plan.reason.slice(0, 2048),
      pods: plan.pods.slice(0, 16),
      dryRun: false,
    },
    resources: [`node/${e.node}`],
  };
}
