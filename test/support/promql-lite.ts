/**
 * Test support: instant PromQL over one scrape, enough to run the field notes' queries against
 * what the agent exports. Queries are parsed by Prometheus' own grammar (@prometheus-io/lezer-promql);
 * evaluated here: selectors (=, !=, =~, !~), one-to-one vector matching and scalar comparison
 * (no on/ignoring/group_*), count/sum/avg/min/max by/without, label_replace. Anything else throws,
 * so a query it cannot run fails loudly instead of answering something plausible.
 */
import { parser } from '@prometheus-io/lezer-promql';
import type { PromSeries } from './prom-text.ts';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];
type Value = { kind: 'vector'; series: PromSeries[] } | { kind: 'scalar'; value: number };

export interface QueryShape {
  /** Every label a selector matches on, a by() groups by, or label_replace reads. */
  labels: string[];
  metrics: string[];
}

export function evalPromql(query: string, data: readonly PromSeries[]): PromSeries[] {
  const v = evaluate(root(query), query, data);
  if (v.kind !== 'vector') throw new Error(`${query}: not an instant vector`);
  return v.series;
}

/** The labels and metric names a query depends on (for "every label it needs exists"). */
export function queryShape(query: string): QueryShape {
  const labels = new Set<string>();
  const metrics = new Set<string>();
  const walk = (n: SyntaxNode) => {
    if (n.name === 'VectorSelector') metrics.add(text(query, n.getChild('Identifier')!));
    if (n.name === 'UnquotedLabelMatcher' || n.name === 'GroupingLabels')
      for (const l of n.getChildren('LabelName')) labels.add(text(query, l));
    if (n.name === 'FunctionCall' && text(query, n.getChild('FunctionIdentifier')!) === 'label_replace') {
      labels.add(unquote(text(query, n.getChild('FunctionCallBody')!.getChildren('StringLiteral')[2]!)));
    }
    for (let c = n.firstChild; c; c = c.nextSibling) walk(c);
  };
  walk(root(query));
  return { labels: [...labels], metrics: [...metrics] };
}

function root(query: string): SyntaxNode {
  const tree = parser.parse(query);
  tree.iterate({
    enter: (n) => {
      if (n.type.isError) throw new Error(`${query}: syntax error at ${n.from}`);
    },
  });
  return tree.topNode.firstChild!;
}

const text = (q: string, n: SyntaxNode) => q.slice(n.from, n.to);
const unquote = (s: string) => (s.startsWith("'") ? s.slice(1, -1) : (JSON.parse(s) as string));
const withoutName = (l: Record<string, string>) =>
  Object.fromEntries(Object.entries(l).filter(([k]) => k !== '__name__'));
const key = (l: Record<string, string>) => JSON.stringify(Object.entries(l).sort(([a], [b]) => a.localeCompare(b)));
const anchored = (re: string) => new RegExp(`^(?:${re})$`);

const ARITH: Record<string, (a: number, b: number) => number> = {
  Add: (a, b) => a + b,
  Sub: (a, b) => a - b,
  Mul: (a, b) => a * b,
  Div: (a, b) => a / b,
};
const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  Gtr: (a, b) => a > b,
  Lss: (a, b) => a < b,
  Gte: (a, b) => a >= b,
  Lte: (a, b) => a <= b,
  EqlSingle: (a, b) => a === b,
  Eql: (a, b) => a === b,
  Neq: (a, b) => a !== b,
};

function evaluate(n: SyntaxNode, q: string, data: readonly PromSeries[]): Value {
  switch (n.name) {
    case 'ParenExpr':
      return evaluate(n.firstChild!, q, data);
    case 'NumberDurationLiteral':
    case 'NumberLiteral':
      return { kind: 'scalar', value: Number(text(q, n)) };
    case 'VectorSelector': {
      const name = text(q, n.getChild('Identifier')!);
      const matchers = (n.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []).map((m) => {
        const label = text(q, m.getChild('LabelName')!);
        const op = m.getChild('MatchOp')!.firstChild!.name;
        const want = unquote(text(q, m.getChild('StringLiteral')!));
        return (l: Record<string, string>) => {
          const have = l[label] ?? '';
          if (op === 'EqlSingle') return have === want;
          if (op === 'Neq') return have !== want;
          if (op === 'EqlRegex') return anchored(want).test(have);
          if (op === 'NeqRegex') return !anchored(want).test(have);
          throw new Error(`${q}: matcher ${op}`);
        };
      });
      return {
        kind: 'vector',
        series: data.filter((s) => s.labels.__name__ === name && matchers.every((m) => m(s.labels))),
      };
    }
    case 'BinaryExpr': {
      const [lhs, op, rhs] = [n.firstChild!, n.firstChild!.nextSibling!, n.lastChild!];
      if (op.nextSibling?.from !== rhs.from) throw new Error(`${q}: binary modifiers are not supported`);
      const a = evaluate(lhs, q, data);
      const b = evaluate(rhs, q, data);
      const arith = ARITH[op.name];
      const cmp = COMPARE[op.name];
      if (!arith && !cmp) throw new Error(`${q}: operator ${op.name}`);
      if (a.kind === 'vector' && b.kind === 'scalar') {
        return arith
          ? {
              kind: 'vector',
              series: a.series.map((s) => ({ labels: withoutName(s.labels), value: arith(s.value, b.value) })),
            }
          : { kind: 'vector', series: a.series.filter((s) => cmp!(s.value, b.value)) };
      }
      if (a.kind === 'vector' && b.kind === 'vector') {
        const right = new Map<string, PromSeries>();
        for (const s of b.series) {
          const k = key(withoutName(s.labels));
          if (right.has(k)) throw new Error(`${q}: many-to-one match on the right (${k})`);
          right.set(k, s);
        }
        return {
          kind: 'vector',
          series: a.series.flatMap((s) => {
            const r = right.get(key(withoutName(s.labels)));
            if (!r) return [];
            if (arith) return [{ labels: withoutName(s.labels), value: arith(s.value, r.value) }];
            return cmp!(s.value, r.value) ? [s] : [];
          }),
        };
      }
      throw new Error(`${q}: scalar on the left is not supported`);
    }
    case 'AggregateExpr': {
      const op = text(q, n.getChild('AggregateOp')!);
      const mod = n.getChild('AggregateModifier');
      const by = Boolean(mod?.getChild('By'));
      const grouping = (mod?.getChild('GroupingLabels')?.getChildren('LabelName') ?? []).map((l) => text(q, l));
      const inner = evaluate(n.getChild('FunctionCallBody')!.firstChild!, q, data);
      if (inner.kind !== 'vector') throw new Error(`${q}: ${op} of a scalar`);
      const groups = new Map<string, { labels: Record<string, string>; values: number[] }>();
      for (const s of inner.series) {
        const labels = Object.fromEntries(
          Object.entries(withoutName(s.labels)).filter(([k]) =>
            by ? grouping.includes(k) : !grouping.includes(k) && mod !== null,
          ),
        );
        const g = groups.get(key(labels)) ?? { labels, values: [] };
        g.values.push(s.value);
        groups.set(key(labels), g);
      }
      const fold: Record<string, (v: number[]) => number> = {
        count: (v) => v.length,
        sum: (v) => v.reduce((x, y) => x + y, 0),
        avg: (v) => v.reduce((x, y) => x + y, 0) / v.length,
        max: (v) => Math.max(...v),
        min: (v) => Math.min(...v),
      };
      if (!fold[op]) throw new Error(`${q}: aggregation ${op}`);
      return {
        kind: 'vector',
        series: [...groups.values()].map((g) => ({ labels: g.labels, value: fold[op]!(g.values) })),
      };
    }
    case 'FunctionCall': {
      const fn = text(q, n.getChild('FunctionIdentifier')!);
      if (fn !== 'label_replace') throw new Error(`${q}: function ${fn}`);
      const body = n.getChild('FunctionCallBody')!;
      const v = evaluate(body.firstChild!, q, data);
      const [dst, repl, src, re] = body.getChildren('StringLiteral').map((s) => unquote(text(q, s)));
      if (v.kind !== 'vector' || dst === undefined || repl === undefined || src === undefined || re === undefined)
        throw new Error(`${q}: label_replace arguments`);
      return {
        kind: 'vector',
        series: v.series.map((s) => {
          const m = anchored(re).exec(s.labels[src] ?? '');
          if (!m) return s;
          const value = repl.replace(/\$(\d+)/g, (_, i: string) => m[Number(i)] ?? '');
          const labels = { ...s.labels, [dst]: value };
          if (value === '') delete labels[dst];
          return { labels, value: s.value };
        }),
      };
    }
    default:
      throw new Error(`${q}: ${n.name} is not supported here`);
  }
}
