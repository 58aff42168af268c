/**
 * The real ports of the opt-in paused reset (operator-pause.ts): this node's labels and the GPU
 * Operator's pods through the Kubernetes API, persistence mode through nvidia-smi.
 *
 * RBAC (infra/k8s/actuator/rbac.yaml, component reset-pause): nodes get, patch (its own Node: the
 * `nvidia.com/gpu.deploy.*` labels and the pause record annotation, one merge patch); pods list in the
 * GPU Operator's namespace (field selector `spec.nodeName=<this node>`, label selector `app in (…)`).
 */
import { execFileSync } from 'node:child_process';
import { PatchStrategy, setHeaderOptions, type CoreV1Api } from '@kubernetes/client-node';
import { OPERATOR_PAUSED_ANNOTATION, type OperatorClientsPort } from './operator-pause.ts';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export function kubeOperatorClients(core: CoreV1Api, node: string, namespace: string): OperatorClientsPort {
  return {
    async read() {
      const n = await core.readNode({ name: node });
      return { labels: { ...(n.metadata?.labels ?? {}) }, annotations: { ...(n.metadata?.annotations ?? {}) } };
    },
    async patch(labels, record) {
      // A merge patch: a null value removes the key (RFC 7386), so an absent label is absent again.
      const body = { metadata: { labels, annotations: { [OPERATOR_PAUSED_ANNOTATION]: record } } };
      await core.patchNode({ name: node, body }, MERGE_PATCH);
    },
    async podsOnNode(apps) {
      const list = await core.listNamespacedPod({
        namespace,
        fieldSelector: `spec.nodeName=${node}`,
        labelSelector: `app in (${apps.join(',')})`,
      });
      return list.items.map((p) => `${p.metadata?.namespace ?? namespace}/${p.metadata?.name ?? '?'}`);
    },
  };
}

/**
 * Persistence mode through nvidia-smi (`--query-gpu=persistence_mode`, `-pm 0|1`): read returns
 * undefined when the tool cannot say (then the pause leaves it alone). Synchronous and bounded: one
 * short call before and after a reset.
 */
export function nvidiaSmiPersistence(path: string, timeoutMs = 15_000, env?: NodeJS.ProcessEnv) {
  return {
    read(uuid: string): boolean | undefined {
      try {
        const out = execFileSync(path, ['-i', uuid, '--query-gpu=persistence_mode', '--format=csv,noheader'], {
          encoding: 'utf8',
          timeout: timeoutMs,
          stdio: ['ignore', 'pipe', 'ignore'],
          ...(env ? { env } : {}),
        }).trim();
        return out === 'Enabled' ? true : out === 'Disabled' ? false : undefined;
      } catch {
        return undefined;
      }
    },
    set(uuid: string, on: boolean): { ok: true } | { ok: false; reason: string } {
      try {
        execFileSync(path, ['-i', uuid, '-pm', on ? '1' : '0'], {
          timeout: timeoutMs,
          stdio: 'ignore',
          ...(env ? { env } : {}),
        });
        return { ok: true };
      } catch (err) {
        return { ok: false, reason: err instanceof Error ? err.message.split('\n')[0]!.slice(0, 200) : String(err) };
      }
    },
  };
}
