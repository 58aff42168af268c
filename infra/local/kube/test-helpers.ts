import * as k8s from '@kubernetes/client-node';
import type { KubeSim } from './index.ts';

/** Test helpers: the real client-node APIs against a sim, and ApiException unpacking. */
export function clients(sim: KubeSim) {
  const kc = new k8s.KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    policy: kc.makeApiClient(k8s.PolicyV1Api),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
  };
}

export interface Failure {
  code: number;
  status: { reason?: string; message?: string; code?: number; details?: { causes?: { message: string }[] } };
}

/** Runs `fn`, expecting an ApiException; returns its HTTP code and parsed Status body. */
export async function failure(fn: () => Promise<unknown>): Promise<Failure> {
  try {
    await fn();
  } catch (err) {
    const e = err as { code?: number; body?: unknown };
    if (typeof e.code !== 'number') throw err;
    const body = typeof e.body === 'string' ? (JSON.parse(e.body) as Failure['status']) : (e.body as Failure['status']);
    return { code: e.code, status: body };
  }
  throw new Error('expected the call to fail');
}

export const patchWith = (strategy: string) => k8s.setHeaderOptions('Content-Type', strategy);
export { k8s };
