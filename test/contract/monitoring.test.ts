/**
 * The monitoring component (infra/k8s/monitoring): every alert and dashboard expression is PromQL
 * that parses (Prometheus' own Lezer grammar, @prometheus-io/lezer-promql), names only series the
 * node agent exports (its metric-name constants and dcgm-exporter field list), and the Service the
 * ServiceMonitor scrapes selects the agent's pods on a port its container names. Rendered by the
 * real `kubectl kustomize` where kubectl is installed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { AGENT_METRIC_NAMES } from '../../node-agent/agent-metrics.ts';
import { HEALTH_METRIC_NAMES } from '../../node-agent/agent-health.ts';
import { DCGM_GPU_FIELDS, DCGM_MIG_FIELDS, DCGM_XID_ERRORS } from '../../node-agent/dcgm.ts';
import { PUBLISHER_METRIC_NAMES } from '../../node-agent/publisher/publisher-metrics.ts';
import { REMEDIATION_PHASES } from '../../events/catalog/remediation.ts';
import { REMEDIATION_ACTIONS } from '../../events/xid.ts';
import { InvocationMetrics } from '../../functions/lib/metrics.ts';
import { commandWorks, requireTool } from '../tools.ts';

const root = new URL('../../', import.meta.url).pathname;
const dir = join(root, 'infra/k8s/monitoring');
const EXPORTED = new Set([
  'up', // Prometheus' own, per scrape target
  ...Object.values(AGENT_METRIC_NAMES),
  ...Object.values(PUBLISHER_METRIC_NAMES),
  ...Object.values(HEALTH_METRIC_NAMES),
  ...DCGM_GPU_FIELDS.map((f) => f.name),
  ...DCGM_MIG_FIELDS.map((f) => f.name),
  DCGM_XID_ERRORS.name,
]);

/** The series an expression selects, or the first syntax error in it. */
function selectors(expr: string): { names: string[]; error?: string } {
  const names: string[] = [];
  let error: string | undefined;
  parser.parse(expr).iterate({
    enter(n) {
      if (n.type.isError) error ??= `syntax error at ${n.from}: ${expr.slice(Math.max(0, n.from - 10), n.to + 10)}`;
      if (n.name === 'Identifier' && n.node.parent?.name === 'VectorSelector') names.push(expr.slice(n.from, n.to));
    },
  });
  return { names, ...(error ? { error } : {}) };
}

const rule = parse(readFileSync(join(dir, 'prometheusrule.yaml'), 'utf8')) as {
  spec: { groups: { rules: { alert: string; expr: string }[] }[] };
};
const alerts = rule.spec.groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(readFileSync(join(dir, 'dashboard.json'), 'utf8')) as {
  panels: { title: string; targets: { expr: string }[] }[];
  templating: { list: { name: string; query?: string }[] };
};
const dashboardExprs = [
  ...dashboard.panels.flatMap((p) => p.targets.map((t) => [p.title, t.expr] as const)),
  ...dashboard.templating.list.flatMap((v) =>
    v.query?.startsWith('label_values(')
      ? [[v.name, v.query.slice('label_values('.length, v.query.lastIndexOf(','))] as const]
      : [],
  ),
];

describe('infra/k8s/monitoring: alerts and dashboard', () => {
  it.each(alerts.map((a) => [a.alert, a.expr] as const))(
    'alert %s parses and names only exported series',
    (_, expr) => {
      const { names, error } = selectors(expr);
      expect(error).toBeUndefined();
      expect(names.length).toBeGreaterThan(0);
      expect(names.filter((n) => !EXPORTED.has(n))).toEqual([]);
    },
  );

  it.each(dashboardExprs)('dashboard panel "%s" parses and names only exported series', (_, expr) => {
    const { names, error } = selectors(expr);
    expect(error).toBeUndefined();
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !EXPORTED.has(n))).toEqual([]);
  });

  it('a wrong name or a broken expression is caught (the check can fail)', () => {
    expect(selectors('gpu_reflex_spool_event > 0').names.filter((n) => !EXPORTED.has(n))).toEqual([
      'gpu_reflex_spool_event',
    ]);
    expect(selectors('sum by (node (gpu_reflex_spool_events)').error).toBeDefined();
  });
});

/**
 * The functions' dashboard (functions-dashboard.json, Grafana's CloudWatch data source): every query
 * names a metric the functions write, with exactly a dimension set they write it with (CloudWatch
 * matches a metric by its whole set of dimensions), under the namespace the template sets. What is
 * written is learnt by running the one writer (functions/lib/metrics.ts) over a Remediation that acted
 * and one that restored, not from a list kept beside it.
 */
describe('infra/k8s/monitoring: the functions dashboard names only metrics the functions write', () => {
  const written = new Map<string, Set<string>>();
  const m = new InvocationMetrics('remediate', {
    namespace: 'gpu-reflex/test',
    now: () => Date.parse('2026-12-05T10:00:00Z'),
  });
  const report = (phase: string) => ({
    source: 'gpu-reflex.functions',
    detailType: 'Remediation',
    detail: { action: 'drain-node', phase, trigger: { observedAt: '2026-12-05T09:59:00Z' } },
  });
  m.published([report('acted'), report('restored')]);
  for (const doc of m.documents('done')) {
    const cw = (doc._aws as { CloudWatchMetrics: { Metrics: { Name: string }[]; Dimensions: string[][] }[] })
      .CloudWatchMetrics[0]!;
    for (const { Name } of cw.Metrics)
      for (const set of cw.Dimensions)
        written.set(Name, (written.get(Name) ?? new Set()).add([...set].sort().join(',')));
  }
  const fd = JSON.parse(readFileSync(join(dir, 'functions-dashboard.json'), 'utf8')) as {
    uid: string;
    panels: {
      title: string;
      targets: { namespace: string; metricName: string; dimensions: Record<string, string>; matchExact: boolean }[];
    }[];
  };
  const values: Record<string, readonly string[]> = {
    Action: [...REMEDIATION_ACTIONS, 'restore'],
    Phase: REMEDIATION_PHASES,
  };

  it.each(fd.panels.flatMap((p) => p.targets.map((t) => [p.title, t] as const)))('panel "%s"', (_, t) => {
    expect(t.namespace).toBe('gpu-reflex/${stage}');
    expect([...written.keys()]).toContain(t.metricName);
    expect(t.matchExact).toBe(true);
    expect([...written.get(t.metricName)!]).toContain(Object.keys(t.dimensions).sort().join(','));
    for (const [k, v] of Object.entries(t.dimensions)) if (v !== '*' && values[k]) expect(values[k]).toContain(v);
  });

  it('the check can fail: a metric nobody writes, or a dimension set it is not written with', () => {
    expect(written.has('BreakerOpen')).toBe(false);
    expect(written.get('TimeToRestore')).toEqual(new Set(['Action,Function']));
    expect(written.get('Remediations')).toEqual(new Set(['Action,Function,Phase']));
  });

  it("reads the namespace the template gives the functions (serverless.yml's custom.metricsNamespace)", () => {
    expect(readFileSync(join(root, 'serverless.yml'), 'utf8')).toMatch(
      /^ {2}metricsNamespace: gpu-reflex\/\$\{sls:stage\}$/m,
    );
  });
});

const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

describe('infra/k8s with the monitoring component (kubectl kustomize)', kubectl.options, () => {
  it('scrapes the agent pods: the Service selects them on the port their container names; the job is the Service', () => {
    const overlay = mkdtempSync(join(tmpdir(), 'gr-monitoring-'));
    const k8s = join(root, 'infra/k8s');
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [${relative(overlay, k8s)}]\ncomponents: [${relative(overlay, dir)}]\n`,
    );
    const objects = parseAllDocuments(execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' })).map(
      (d) =>
        d.toJS() as {
          kind: string;
          metadata: { name: string; labels?: Record<string, string> };
          spec?: never;
          data?: Record<string, string>;
        },
    );
    const find = (kind: string) => objects.filter((o) => o.kind === kind);
    const ds = find('DaemonSet')[0] as unknown as {
      spec: {
        template: {
          metadata: { labels: Record<string, string> };
          spec: { containers: { ports?: { name: string }[] }[] };
        };
      };
    };
    const svc = find('Service')[0] as unknown as {
      metadata: { name: string };
      spec: { selector: Record<string, string>; ports: { targetPort: string }[] };
    };
    expect(Object.entries(svc.spec.selector).every(([k, v]) => ds.spec.template.metadata.labels[k] === v)).toBe(true);
    const ports = ds.spec.template.spec.containers.flatMap((c) => c.ports ?? []).map((p) => p.name);
    expect(ports).toContain(svc.spec.ports[0]!.targetPort);
    // A degraded agent is not ready (/healthz 503) and is the one whose series say why: still scraped.
    expect((svc.spec as { publishNotReadyAddresses?: boolean }).publishNotReadyAddresses).toBe(true);
    const sm = find('ServiceMonitor')[0] as unknown as {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
    };
    const svcLabels = (find('Service')[0]!.metadata.labels ?? {}) as Record<string, string>;
    expect(Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => svcLabels[k] === v)).toBe(true);
    expect(sm.spec.endpoints[0]!.port).toBe('metrics');
    // The Prometheus Operator names the job after the Service: the alerts' up{job=…} is that name.
    expect(alerts.find((a) => a.alert === 'GpuReflexAgentDown')!.expr).toContain(`job="${svc.metadata.name}"`);
    expect(find('PrometheusRule')).toHaveLength(1);
    const cm = find('ConfigMap').find((c) => c.metadata.name === 'gpu-reflex-dashboard')!;
    expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(JSON.parse(cm.data!['gpu-reflex-node-agents.json']!)).toMatchObject({ uid: 'gpu-reflex-node-agents' });
    const fcm = find('ConfigMap').find((c) => c.metadata.name === 'gpu-reflex-functions-dashboard')!;
    expect(fcm.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(JSON.parse(fcm.data!['gpu-reflex-functions.json']!)).toMatchObject({ uid: 'gpu-reflex-functions' });
  });
});
