import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * How a client tells this simulated cluster from a real one: by what it serves, not by its
 * address (a real cluster can sit on 127.0.0.1 behind a tunnel, and this one can listen anywhere).
 *
 * A real kube-apiserver serves only its own non-resource paths (/api, /apis, /version, /healthz,
 * /openapi, …) and answers any other one with 404 NotFound, or 403 for a user not allowed it
 * (https://kubernetes.io/docs/reference/access-authn-authz/rbac/#other-component-roles,
 * "nonResourceURLs"); a path under /gpu-reflex/ is none of its own, so only this simulator answers
 * it with this body. `gpu-reflex local --kubeconfig` refuses a cluster without it unless told
 * `--write-to-real-cluster` (infra/local/cluster-identity.ts).
 */
export const SIMULATED_CLUSTER_PATH = '/gpu-reflex/simulated-cluster';
export const SIMULATED_CLUSTER_KIND = 'GpuReflexSimulatedCluster';

export interface SimulatedClusterMarker {
  kind: typeof SIMULATED_CLUSTER_KIND;
  apiVersion: 'gpu-reflex.io/v1';
  /** One per started simulator: two of them side by side are told apart. */
  id: string;
  note: string;
}

export function simulatedClusterMarker(): SimulatedClusterMarker {
  return {
    kind: SIMULATED_CLUSTER_KIND,
    apiVersion: 'gpu-reflex.io/v1',
    id: randomUUID(),
    note: 'the gpu-reflex simulated cluster (infra/local/kube): nothing here is a real node',
  };
}

/** Answers GET of the marker path; returns false for every other request (the API server's). */
export function serveMarker(marker: SimulatedClusterMarker, req: IncomingMessage, res: ServerResponse): boolean {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (req.method !== 'GET' || path !== SIMULATED_CLUSTER_PATH) return false;
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(marker));
  return true;
}
