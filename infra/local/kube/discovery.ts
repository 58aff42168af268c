import type { ServedApis } from './api-versions.ts';
import { apiVersionOf, verbsFor, type ResourceDef } from './resources.ts';

/**
 * Discovery documents in their legacy (unaggregated) form. kubectl asks for the aggregated
 * `apidiscovery.k8s.io/v2` form first and falls back when the reply is plain `application/json`,
 * which is what every handler here sends. What is listed is what the cluster's release serves
 * (api-versions.ts): a DRA version it does not serve is absent, as from a real server.
 */
export function apiVersions(hostPort: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: hostPort }],
  };
}

function group(apis: ServedApis, name: string): object {
  const versions = apis
    .groupVersions()
    .filter((g) => g.group === name)
    .map((g) => ({ groupVersion: `${g.group}/${g.version}`, version: g.version }));
  return { name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(apis: ServedApis): object {
  const names = [...new Set(apis.groupVersions().map((g) => g.group))];
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: names.map((n) => group(apis, n)) };
}

export function apiGroup(apis: ServedApis, name: string): object | undefined {
  if (!apis.groupVersions().some((g) => g.group === name)) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...group(apis, name) };
}

/** Subresources as discovery lists them; `pods/eviction` names policy/v1 so kubectl drain evicts. */
function subresourceEntries(r: ResourceDef): object[] {
  return (r.subresources ?? []).map((sub) => {
    const base = { name: `${r.plural}/${sub}`, singularName: '', namespaced: r.namespaced };
    if (sub === 'eviction') return { ...base, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] };
    if (sub === 'binding') return { ...base, kind: 'Binding', verbs: ['create'] };
    return { ...base, kind: r.kind, verbs: ['get', 'patch', 'update'] };
  });
}

export function apiResourceList(apis: ServedApis, groupVersion: string): object | undefined {
  const defs = apis.resources().filter((r) => apiVersionOf(r) === groupVersion);
  if (defs.length === 0) return undefined;
  const resources = defs.flatMap((r) => [
    {
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: verbsFor(r),
      ...(r.shortNames ? { shortNames: r.shortNames } : {}),
      ...(r.plural === 'pods' || r.plural === 'daemonsets' ? { categories: ['all'] } : {}),
    },
    ...subresourceEntries(r),
  ]);
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources };
}
