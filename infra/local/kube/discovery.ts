import { apiVersionOf, groupVersions, RESOURCES, verbsFor, type ResourceDef } from './resources.ts';

/**
 * Discovery documents in their legacy (unaggregated) form. kubectl asks for the aggregated
 * `apidiscovery.k8s.io/v2` form first and falls back when the reply is plain `application/json`,
 * which is what every handler here sends.
 */
export const VERSION_INFO = {
  major: '1',
  minor: '30',
  gitVersion: 'v1.30.0-gpu-reflex-sim',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.22.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

export function apiVersions(hostPort: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: hostPort }],
  };
}

function group(name: string): object {
  const versions = groupVersions()
    .filter((g) => g.group === name)
    .map((g) => ({ groupVersion: `${g.group}/${g.version}`, version: g.version }));
  return { name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(): object {
  const names = [...new Set(groupVersions().map((g) => g.group))];
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: names.map(group) };
}

export function apiGroup(name: string): object | undefined {
  if (!groupVersions().some((g) => g.group === name)) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...group(name) };
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

export function apiResourceList(groupVersion: string): object | undefined {
  const defs = RESOURCES.filter((r) => apiVersionOf(r) === groupVersion);
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
