import { checkEviction } from './delete-options.ts';
import { errors, success, type StatusBody } from './errors.ts';
import type { Lifecycle } from './lifecycle.ts';
import { evictionVerdict } from './pdb.ts';
import { resource } from './resources.ts';
import type { Store } from './store.ts';
import type { KubeObject, Pod } from './types.ts';

/** The pod subresources that act rather than store: eviction (against disruption budgets) and binding. */

const PODS = resource('pods');

/** What the two need of the API server. */
export interface PodWrites {
  readonly store: Store;
  readonly lifecycle: Lifecycle;
  /** The pods of a budget's namespace its selector picks. */
  podsSelectedBy(pdb: KubeObject): Pod[];
}

/** POST pods/{name}/eviction: a delete that first asks the pod's disruption budget. */
export function evictPod(
  c: PodWrites,
  ns: string,
  name: string,
  body: unknown,
  opts: { dryRun?: boolean } = {},
): StatusBody {
  // The body is checked before the pod is looked up, as the real eviction REST handler does.
  const options = checkEviction(ns, name, body);
  const pod = c.store.pod(ns, name);
  if (!pod) throw errors.notFound(PODS, name);
  // deleteOptions.preconditions, as the real eviction handler checks them: a pod recreated under
  // the same name (a StatefulSet's) is another pod, and an eviction meant for the old one fails.
  const pre = options.preconditions;
  if (pre?.uid !== undefined && pre.uid !== pod.metadata.uid) {
    throw errors.conflictMessage(
      PODS,
      name,
      `Operation cannot be fulfilled on pods "${name}": Precondition failed: UID in precondition: ${pre.uid}, UID ` +
        `in object meta: ${pod.metadata.uid}`,
    );
  }
  if (pre?.resourceVersion !== undefined && pre.resourceVersion !== pod.metadata.resourceVersion) {
    throw errors.conflictMessage(
      PODS,
      name,
      `Operation cannot be fulfilled on pods "${name}": Precondition failed: ResourceVersion in ` +
        `precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${pod.metadata.resourceVersion}`,
    );
  }
  if (pod.metadata.deletionTimestamp) return success(201);
  const verdict = evictionVerdict(pod, c.store.list('poddisruptionbudgets.policy', ns), (pdb) => c.podsSelectedBy(pdb));
  if (!verdict.allowed) {
    if (verdict.code === 500) throw errors.internal(verdict.message);
    throw errors.tooManyRequests(verdict.message, [{ reason: 'DisruptionBudget', message: verdict.cause ?? '' }]);
  }
  if (!(options.dryRun || opts.dryRun)) {
    c.lifecycle.delete(PODS, pod, options.gracePeriodSeconds);
    c.lifecycle.settle();
  }
  return success(201);
}

/** POST pods/{name}/binding: what a custom scheduler does. */
export function bindPod(c: PodWrites, ns: string, name: string, body: unknown): StatusBody {
  const pod = c.store.pod(ns, name);
  if (!pod) throw errors.notFound(PODS, name);
  const target = ((body ?? {}) as { target?: { name?: string } }).target?.name;
  if (!target) throw errors.invalid(PODS, name, 'target.name', 'Required value');
  if (pod.spec.nodeName)
    throw errors.conflictMessage(
      PODS,
      name,
      `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node ` +
        `"${pod.spec.nodeName}"`,
    );
  c.lifecycle.bind(pod, target);
  c.lifecycle.settle();
  return success(201);
}
