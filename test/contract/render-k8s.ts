import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** infra/k8s, as a platform engineer's overlay would use it. */
export const K8S = new URL('../../infra/k8s', import.meta.url).pathname;

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown> & { template?: { spec: Record<string, unknown> } };
  data?: Record<string, string>;
};

/**
 * `kubectl kustomize` of an overlay that names infra/k8s and the given components (folders under
 * infra/k8s), by relative paths as kustomize wants them.
 */
export function renderOverlay(components: string[] = []): K8sObject[] {
  const dir = mkdtempSync(join(tmpdir(), 'gr-overlay-'));
  try {
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n' +
        `resources: [${relative(dir, K8S)}]\n` +
        `components: [${components.map((c) => relative(dir, join(K8S, c))).join(', ')}]\n`,
    );
    const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    return parseAllDocuments(out).map((d) => d.toJS() as K8sObject);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
