import http from 'node:http';
import https from 'node:https';
import { loadKubeConfig } from '../../functions/adapters/kube/config.ts';
import { FACT_NAMES } from '../../functions/labels/core/config.ts';
import { SIMULATED_CLUSTER_KIND, SIMULATED_CLUSTER_PATH } from './kube/identity.ts';

/**
 * Whether a kubeconfig points at gpu-reflex's simulated cluster, decided by identity: the cluster
 * must serve the simulator's marker (kube/identity.ts) to the kubeconfig's own credentials. Its
 * address proves nothing (a real cluster behind `kubectl port-forward` or a tunnel is on
 * 127.0.0.1 too). Anything else — a 404, a 403, a body of another kind, no answer — is "not
 * simulated": unknown is never read as safe.
 */
export type ClusterIdentity =
  { simulated: true; server: string; id: string } | { simulated: false; server: string; why: string };

const PROBE_TIMEOUT_MS = 5_000;

export async function identifyCluster(kubeconfigPath: string): Promise<ClusterIdentity> {
  const kc = loadKubeConfig({ kubeconfigPath });
  const server = kc.getCurrentCluster()?.server ?? '';
  const not = (why: string): ClusterIdentity => ({ simulated: false, server, why });
  let url: URL;
  try {
    url = new URL(SIMULATED_CLUSTER_PATH, server.endsWith('/') ? server : `${server}/`);
  } catch {
    return not(`its server "${server}" is not a URL`);
  }
  // The kubeconfig's own TLS and credentials, as client-node would send them.
  const init = (await kc.applyToFetchOptions({})) as { agent?: http.Agent; headers?: unknown };
  const headers = Object.fromEntries(
    init.headers instanceof Headers ? [...init.headers.entries()] : Object.entries(init.headers ?? {}),
  ) as Record<string, string>;
  const lib = url.protocol === 'https:' ? https : http;
  const agent = init.agent instanceof (url.protocol === 'https:' ? https.Agent : http.Agent) ? init.agent : undefined;
  let answer: { status: number; body: string };
  try {
    answer = await new Promise((resolve, reject) => {
      const req = lib.get(url, { headers: { ...headers, Accept: 'application/json' }, agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= 64 * 1024) chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.setTimeout(PROBE_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`)));
      req.on('error', reject);
    });
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return not(`it could not be asked (${e.code ?? e.message ?? String(err)})`);
  }
  if (answer.status !== 200) return not(`it answers ${SIMULATED_CLUSTER_PATH} with HTTP ${answer.status}`);
  let body: { kind?: unknown; id?: unknown };
  try {
    body = JSON.parse(answer.body) as typeof body;
  } catch {
    return not(`its answer to ${SIMULATED_CLUSTER_PATH} is not the simulator's`);
  }
  if (body?.kind !== SIMULATED_CLUSTER_KIND || typeof body.id !== 'string')
    return not(`its answer to ${SIMULATED_CLUSTER_PATH} is not the simulator's`);
  return { simulated: true, server, id: body.id };
}

/**
 * The node labeler's configuration on a cluster that is not the simulator: every fact's key
 * `false` (functions/labels/core/config.ts), so it writes no label and no record. The agents there
 * read mock GPUs, whose driver, CUDA and model are not those nodes'.
 */
export function labelNothingConfigText(): string {
  return `${JSON.stringify({ keys: Object.fromEntries(FACT_NAMES.map((f) => [f, false])) }, null, 2)}\n`;
}
