import type { ListResult } from './cluster-list.ts';
import type { ResourceDef } from './resources.ts';
import type { KubeObject, Node, Pod } from './types.ts';

/**
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` — the server-side printing kubectl asks
 * for. Nodes, pods, PDBs and DaemonSets get kubectl's usual columns; everything else Name and Age.
 */
export function wantsTable(accept: string | undefined): boolean {
  return accept !== undefined && /as=Table/.test(accept);
}

interface Column {
  name: string;
  type: string;
  format?: string;
  priority?: number;
  cell: (o: KubeObject) => string | number | boolean;
}

function age(created: string, now: number): string {
  const s = Math.max(0, Math.floor((now - Date.parse(created)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

function nodeStatus(n: Node): string {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  const parts = [ready?.status === 'True' ? 'Ready' : 'NotReady'];
  if (n.spec?.unschedulable) parts.push('SchedulingDisabled');
  return parts.join(',');
}

function roles(n: Node): string {
  const r = Object.keys(n.metadata.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length));
  return r.length > 0 ? r.join(',') : '<none>';
}

const info = (o: KubeObject) => ((o as Node).status?.nodeInfo ?? {}) as Record<string, string | undefined>;

function address(n: Node, type: string): string {
  return (
    ((n.status?.addresses ?? []) as { type: string; address: string }[]).find((a) => a.type === type)?.address ??
    '<none>'
  );
}

/** Events: the newest of lastTimestamp, the series' last observation and eventTime. */
function lastSeen(o: KubeObject, now: number): string {
  const series = (o.series as { lastObservedTime?: string } | undefined)?.lastObservedTime;
  const when =
    (o.lastTimestamp as string | undefined) ??
    series ??
    (o.eventTime as string | undefined) ??
    o.metadata.creationTimestamp;
  return age(when, now);
}

function columns(r: ResourceDef, now: number): Column[] {
  const name: Column = { name: 'Name', type: 'string', format: 'name', cell: (o) => o.metadata.name };
  const ageCol: Column = { name: 'Age', type: 'string', cell: (o) => age(o.metadata.creationTimestamp, now) };
  if (r.plural === 'nodes') {
    return [
      name,
      { name: 'Status', type: 'string', cell: (o) => nodeStatus(o as Node) },
      { name: 'Roles', type: 'string', cell: (o) => roles(o as Node) },
      ageCol,
      { name: 'Version', type: 'string', cell: (o) => info(o).kubeletVersion ?? '' },
      { name: 'Internal-IP', type: 'string', priority: 1, cell: (o) => address(o as Node, 'InternalIP') },
      { name: 'External-IP', type: 'string', priority: 1, cell: (o) => address(o as Node, 'ExternalIP') },
      { name: 'OS-Image', type: 'string', priority: 1, cell: (o) => info(o).osImage ?? '<unknown>' },
      { name: 'Kernel-Version', type: 'string', priority: 1, cell: (o) => info(o).kernelVersion ?? '<unknown>' },
      {
        name: 'Container-Runtime',
        type: 'string',
        priority: 1,
        cell: (o) => info(o).containerRuntimeVersion ?? '<unknown>',
      },
    ];
  }
  if (r.plural === 'pods') {
    const p = (o: KubeObject) => o as Pod;
    return [
      name,
      {
        name: 'Ready',
        type: 'string',
        cell: (o) =>
          ((p(o).status?.containerStatuses as { ready?: boolean }[] | undefined) ?? []).filter((c) => c.ready).length +
          '/' +
          p(o).spec.containers.length,
      },
      {
        name: 'Status',
        type: 'string',
        cell: (o) =>
          o.metadata.deletionTimestamp
            ? 'Terminating'
            : p(o).status?.phase === 'Succeeded'
              ? 'Completed'
              : (p(o).status?.phase ?? 'Pending'),
      },
      { name: 'Restarts', type: 'string', cell: () => '0' },
      ageCol,
      { name: 'IP', type: 'string', priority: 1, cell: (o) => String(p(o).status?.podIP ?? '<none>') },
      { name: 'Node', type: 'string', priority: 1, cell: (o) => p(o).spec.nodeName ?? '<none>' },
      {
        name: 'Nominated Node',
        type: 'string',
        priority: 1,
        cell: (o) => String(p(o).status?.nominatedNodeName ?? '<none>'),
      },
      { name: 'Readiness Gates', type: 'string', priority: 1, cell: () => '<none>' },
    ];
  }
  if (r.plural === 'events' && r.group === '') {
    const ev = (o: KubeObject) =>
      o as KubeObject & {
        involvedObject?: { kind?: string; name?: string; fieldPath?: string };
        source?: { component?: string; host?: string };
        count?: number;
      };
    return [
      { name: 'Last Seen', type: 'string', cell: (o) => lastSeen(o, now) },
      { name: 'Type', type: 'string', cell: (o) => String(o.type ?? '') },
      { name: 'Reason', type: 'string', cell: (o) => String(o.reason ?? '') },
      {
        name: 'Object',
        type: 'string',
        cell: (o) => `${(ev(o).involvedObject?.kind ?? '').toLowerCase()}/${ev(o).involvedObject?.name ?? ''}`,
      },
      { name: 'Subobject', type: 'string', priority: 1, cell: (o) => ev(o).involvedObject?.fieldPath ?? '' },
      {
        name: 'Source',
        type: 'string',
        priority: 1,
        cell: (o) =>
          [ev(o).source?.component ?? String(o.reportingComponent ?? ''), ev(o).source?.host]
            .filter(Boolean)
            .join(', '),
      },
      { name: 'Message', type: 'string', cell: (o) => String(o.message ?? '') },
      {
        name: 'First Seen',
        type: 'string',
        priority: 1,
        cell: (o) => age(String(o.firstTimestamp ?? o.eventTime ?? o.metadata.creationTimestamp), now),
      },
      { name: 'Count', type: 'string', priority: 1, cell: (o) => String(ev(o).count ?? 1) },
      { name: 'Name', type: 'string', priority: 1, cell: (o) => o.metadata.name },
    ];
  }
  if (r.plural === 'leases') {
    return [
      name,
      {
        name: 'Holder',
        type: 'string',
        cell: (o) => String((o.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? ''),
      },
      ageCol,
    ];
  }
  if (r.plural === 'poddisruptionbudgets') {
    const spec = (o: KubeObject) =>
      (o.spec ?? {}) as { minAvailable?: number | string; maxUnavailable?: number | string };
    return [
      name,
      { name: 'Min Available', type: 'string', cell: (o) => String(spec(o).minAvailable ?? 'N/A') },
      { name: 'Max Unavailable', type: 'string', cell: (o) => String(spec(o).maxUnavailable ?? 'N/A') },
      {
        name: 'Allowed Disruptions',
        type: 'integer',
        cell: (o) => (o.status as { disruptionsAllowed?: number } | undefined)?.disruptionsAllowed ?? 0,
      },
      ageCol,
    ];
  }
  if (r.plural === 'priorityclasses') {
    // pkg/printers/internalversion/printers.go priorityClassColumnDefinitions: Name, Value, Global-Default, Age,
    // PreemptionPolicy.
    const pc = (o: KubeObject) =>
      o as KubeObject & { value?: number; globalDefault?: boolean; preemptionPolicy?: string };
    return [
      name,
      { name: 'Value', type: 'integer', cell: (o) => pc(o).value ?? 0 },
      { name: 'Global-Default', type: 'boolean', cell: (o) => pc(o).globalDefault ?? false },
      ageCol,
      { name: 'PreemptionPolicy', type: 'string', cell: (o) => pc(o).preemptionPolicy ?? 'PreemptLowerPriority' },
    ];
  }
  if (r.plural === 'daemonsets') {
    const st = (o: KubeObject) => (o.status ?? {}) as Record<string, number>;
    return [
      name,
      { name: 'Desired', type: 'integer', cell: (o) => st(o).desiredNumberScheduled ?? 0 },
      { name: 'Current', type: 'integer', cell: (o) => st(o).currentNumberScheduled ?? 0 },
      { name: 'Ready', type: 'integer', cell: (o) => st(o).numberReady ?? 0 },
      ageCol,
    ];
  }
  return [name, ageCol];
}

export function tableOf(r: ResourceDef, result: ListResult, now: number): object {
  const cols = columns(r, now);
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: result.resourceVersion, ...(result.continue ? { continue: result.continue } : {}) },
    columnDefinitions: cols.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.name,
      priority: c.priority ?? 0,
    })),
    rows: result.items.map((o) => ({
      cells: cols.map((c) => c.cell(o)),
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}
