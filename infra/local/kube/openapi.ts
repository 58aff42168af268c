import { apiVersionOf, RESOURCES } from './resources.ts';

/**
 * A minimal OpenAPI v3 surface, only so `kubectl apply` (whose default `--validate=strict` asks
 * the server whether PATCH accepts `fieldValidation`) does not fail with "failed to download
 * openapi". Each group-version document lists the PATCH operations with their GVK and the
 * `fieldValidation` parameter, and nothing else: no schemas, so kubectl computes strategic merge
 * patches from its built-in types. `/openapi/v2` stays a 404.
 */
function gvPath(gv: string): string {
  return gv.includes('/') ? `apis/${gv}` : `api/${gv}`;
}

export function openApiRoot(): object {
  const gvs = [...new Set(RESOURCES.map(apiVersionOf))];
  return {
    paths: Object.fromEntries(
      gvs.map((gv) => [gvPath(gv), { serverRelativeURL: `/openapi/v3/${gvPath(gv)}?hash=sim` }]),
    ),
  };
}

export function openApiGroupVersion(path: string): object | undefined {
  const defs = RESOURCES.filter((r) => gvPath(apiVersionOf(r)) === path);
  if (defs.length === 0) return undefined;
  const paths: Record<string, object> = {};
  for (const r of defs) {
    const prefix = `/${gvPath(apiVersionOf(r))}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}/{name}`;
    paths[prefix] = {
      patch: {
        operationId: `patch${r.kind}`,
        parameters: ['dryRun', 'fieldManager', 'fieldValidation', 'force'].map((name) => ({
          name,
          in: 'query',
          schema: { type: name === 'force' ? 'boolean' : 'string' },
        })),
        responses: { '200': { description: 'OK' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes (gpu-reflex simulated)', version: 'v1.30.0' }, paths };
}
