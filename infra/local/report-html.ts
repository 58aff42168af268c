import type { StackReport } from './report.ts';
import type { TimelineEntry } from './timeline.ts';
import { clockText, verdictLine } from './timeline.ts';

/**
 * `--report run.html`: the run as a page a person can look at (issue #31). One self-contained file
 * (no script, no network: inline CSS only, hover text in `title` attributes), one lane per node:
 * the node's gpu-reflex state over time as coloured bands, cordoned spans beneath, and marks at
 * the moment each fault, remediation, fence, eviction, MIG relayout and approval happened, with the
 * `why:` text on hover. Built only from the JSON report (what was observed), like the timeline.
 */

/** The colour of each gpu-reflex state band; an unknown state gets the last one. */
const STATE_COLOURS: Record<string, string> = {
  healthy: '#d8f0d8',
  quarantined: '#ffe2a8',
  draining: '#ffc08a',
  'awaiting-approval': '#f5d0f0',
  'awaiting-repair': '#f4a8a8',
  repairing: '#c8d8ff',
  other: '#dddddd',
};

type MarkKind = 'fault' | 'remediation' | 'fence' | 'evict' | 'mig' | 'approval' | 'capacity' | 'join';

const MARK_GLYPH: Record<MarkKind, string> = {
  fault: '⚡',
  remediation: '▲',
  fence: '■',
  evict: '↗',
  mig: '◆',
  approval: '?',
  capacity: '•',
  join: '+',
};

export interface LaneMark {
  atMs: number;
  kind: MarkKind;
  text: string;
  why?: string;
}

export interface Lane {
  node: string;
  /** Where each state began: the first is the node's state at the run's start (or when it joined). */
  states: { atMs: number; state: string }[];
  cordoned: { fromMs: number; toMs: number }[];
  marks: LaneMark[];
  /** When the node was there: it may join during the run, or leave. */
  fromMs: number;
  toMs: number;
}

const STATE_LABEL = 'gpu-reflex.io/state';

const escape = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** `node <name> …` entries of the cluster observer, by node. */
function nodeOf(e: TimelineEntry, names: ReadonlySet<string>): string | undefined {
  const m = /^node (\S+) /.exec(e.text) ?? / on (\S+?)(?: card \d+)?(?: \(|$)/.exec(e.text);
  if (m && names.has(m[1]!)) return m[1];
  if (names.has(e.who)) return e.who;
  const joined = /^(\S+) joined the cluster/.exec(e.text);
  return joined && names.has(joined[1]!) ? joined[1] : undefined;
}

/** Any node name a plan or detail names (`node`, `nodes`, `target.node`), for approvals. */
function nodesNamed(x: unknown, out = new Set<string>(), depth = 0): Set<string> {
  if (depth > 4 || x === null || typeof x !== 'object') return out;
  for (const [k, v] of Object.entries(x as Record<string, unknown>)) {
    if (k === 'node' && typeof v === 'string') out.add(v);
    else if (k === 'nodes' && Array.isArray(v))
      for (const n of v)
        if (typeof n === 'string') out.add(n);
        else nodesNamed(v, out, depth + 1);
  }
  return out;
}

/** The lanes of a run, one per node it saw, in name order. */
export function lanesOf(r: StackReport): Lane[] {
  const end = r.scenario.durationSeconds * 1000;
  const initial = new Set(r.initial.nodes.map((n) => n.metadata.name));
  const final = new Set(r.final.nodes.map((n) => n.metadata.name));
  const names = new Set([...initial, ...final]);
  const lanes = new Map<string, Lane>();
  for (const name of [...names].sort()) {
    const at0 = r.initial.nodes.find((n) => n.metadata.name === name);
    lanes.set(name, {
      node: name,
      states: [{ atMs: 0, state: at0?.metadata.labels?.[STATE_LABEL] ?? 'healthy' }],
      cordoned: at0?.spec?.unschedulable ? [{ fromMs: 0, toMs: end }] : [],
      marks: [],
      fromMs: initial.has(name) ? 0 : end,
      toMs: final.has(name) ? end : 0,
    });
  }
  const mark = (node: string | undefined, m: LaneMark) => {
    if (node) lanes.get(node)?.marks.push(m);
  };
  for (const e of r.timeline) {
    const name = nodeOf(e, names);
    if (!name) continue;
    const lane = lanes.get(name)!;
    if (e.kind === 'cluster' || e.who === 'alicloud' || e.who === 'stack') {
      lane.fromMs = Math.min(lane.fromMs, e.atMs);
      lane.toMs = Math.max(lane.toMs, e.atMs);
    }
    const state = new RegExp(`${STATE_LABEL.replace(/[./]/g, '\\$&')}=([^,\\s]+)`).exec(e.text);
    if (e.kind === 'cluster' && e.text.startsWith(`node ${name} labelled`) && state)
      lane.states.push({ atMs: e.atMs, state: state[1]! });
    else if (e.kind === 'cluster' && e.text === `node ${name} cordoned`)
      lane.cordoned.push({ fromMs: e.atMs, toMs: end });
    else if (e.kind === 'cluster' && e.text === `node ${name} uncordoned`) {
      const open = lane.cordoned.findLast((c) => c.toMs === end);
      if (open) open.toMs = e.atMs;
    } else if (e.kind === 'cluster' && / terminating on /.test(e.text))
      mark(name, { atMs: e.atMs, kind: 'evict', text: e.text });
    else if (e.kind === 'cluster' && /allocatable .*\(device plugin\)/.test(e.text))
      mark(name, { atMs: e.atMs, kind: 'capacity', text: e.text });
    else if (e.kind === 'cluster' && /(un)?tainted /.test(e.text))
      mark(name, { atMs: e.atMs, kind: 'fence', text: e.text });
    else if (/ joined the cluster/.test(e.text)) mark(name, { atMs: e.atMs, kind: 'join', text: e.text });
    else if (e.kind === 'event' && (e.what === 'GPU XID Error' || e.what === 'GPU Health Changed'))
      mark(name, { atMs: e.atMs, kind: 'fault', text: `${e.what}: ${e.text}`, ...(e.why ? { why: e.why } : {}) });
  }
  for (const a of r.actions) {
    const d = a.detail;
    const why = typeof d.reason === 'string' ? d.reason : undefined;
    if (a.detailType === 'Remediation') {
      const node = (d.target as { node?: string } | undefined)?.node;
      const steps = (d.steps as { kind: string; result: string }[] | undefined) ?? [];
      const fenced = steps.some((s) => s.kind === 'fence' || s.kind === 'unfence');
      mark(node, {
        atMs: a.atMs,
        kind: fenced ? 'fence' : 'remediation',
        text: `Remediation: ${String(d.action)} ${String(d.phase)}${d.dryRun === true ? ' (dry run)' : ''}`,
        ...(why ? { why } : {}),
      });
    } else if (a.detailType === 'MIG Layout Change')
      mark(typeof d.node === 'string' ? d.node : undefined, {
        atMs: a.atMs,
        kind: 'mig',
        text: `MIG Layout Change: ${String(d.state ?? '')}`,
        ...(why ? { why } : {}),
      });
    else if (a.detailType === 'Approval Requested') {
      const id = String(d.approvalId);
      for (const node of nodesNamed(d.plan))
        mark(node, {
          atMs: a.atMs,
          kind: 'approval',
          text: `Approval Requested ${id}: gpu-reflex approve ${id}, or "approve ${id}" in chat`,
          ...(typeof d.summary === 'string' ? { why: d.summary } : {}),
        });
    }
  }
  for (const lane of lanes.values()) {
    lane.states.sort((a, b) => a.atMs - b.atMs);
    lane.marks.sort((a, b) => a.atMs - b.atMs);
  }
  return [...lanes.values()];
}

const pct = (ms: number, end: number) => `${end > 0 ? ((Math.min(Math.max(ms, 0), end) / end) * 100).toFixed(3) : 0}%`;

function laneHtml(l: Lane, end: number): string {
  const bands = l.states.map((s, i) => {
    const from = Math.max(s.atMs, l.fromMs);
    const to = Math.min(l.states[i + 1]?.atMs ?? end, l.toMs);
    if (to <= from && !(to === from && end === 0)) return '';
    const colour = STATE_COLOURS[s.state] ?? STATE_COLOURS.other!;
    const title = `${s.state} from ${clockText(from)} to ${clockText(to)}`;
    return (
      `<div class="band" data-state="${escape(s.state)}" title="${escape(title)}" ` +
      `style="left:${pct(from, end)};width:calc(${pct(to, end)} - ${pct(from, end)});background:${colour}">` +
      `${escape(s.state)}</div>`
    );
  });
  const cordons = l.cordoned.map(
    (c) =>
      `<div class="cordon" title="cordoned ${clockText(c.fromMs)}–${clockText(c.toMs)}" ` +
      `style="left:${pct(c.fromMs, end)};width:calc(${pct(c.toMs, end)} - ${pct(c.fromMs, end)})"></div>`,
  );
  const marks = l.marks.map((m) => {
    const title = `${clockText(m.atMs)} ${m.text}${m.why ? `\nwhy: ${m.why}` : ''}`;
    return (
      `<span class="mark ${m.kind}" data-kind="${m.kind}" title="${escape(title)}" ` +
      `style="left:${pct(m.atMs, end)}">${MARK_GLYPH[m.kind]}</span>`
    );
  });
  return (
    `<div class="lane" data-node="${escape(l.node)}"><div class="name">${escape(l.node)}</div>` +
    `<div class="track">${bands.join('')}${cordons.join('')}${marks.join('')}</div></div>`
  );
}

const CSS = `
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px}
.desc{color:#555;max-width:1100px;margin:0 0 8px}
.verdict{font-weight:600;margin:8px 0}
.verdict.fail{color:#b00}
.lane{display:flex;align-items:center;height:34px;border-bottom:1px solid #eee}
.name{width:190px;flex:none;font-family:monospace;overflow:hidden;text-overflow:ellipsis}
.track{position:relative;flex:1;height:28px;background:#fafafa}
.band{position:absolute;top:2px;height:16px;font-size:10px;line-height:16px;overflow:hidden;white-space:nowrap;
  padding-left:2px;box-sizing:border-box;border-right:1px solid #fff}
.cordon{position:absolute;top:20px;height:5px;background:repeating-linear-gradient(45deg,#555 0 3px,#fff 3px 6px)}
.mark{position:absolute;top:0;transform:translateX(-50%);font-size:14px;cursor:help}
.fault{color:#c00}.remediation{color:#06c}.fence{color:#000}.evict{color:#a50}.mig{color:#609}
.approval{color:#c0c;font-weight:700}.capacity{color:#888}.join{color:#080}
.axis{display:flex;margin-left:190px;justify-content:space-between;color:#777;font-family:monospace}
.legend span{margin-right:14px}
`;

/** The whole page. */
export function reportHtml(r: StackReport): string {
  const end = r.scenario.durationSeconds * 1000;
  const lanes = lanesOf(r);
  const verdict = verdictLine(r.summary);
  const ticks = Array.from({ length: 5 }, (_, i) => `<span>${clockText((end * i) / 4)}</span>`).join('');
  const legend = [
    ...Object.entries(MARK_GLYPH).map(([k, g]) => `<span class="${k}">${g} ${k}</span>`),
    ...Object.entries(STATE_COLOURS).map(([k, c]) => `<span style="background:${c}">&nbsp;${k}&nbsp;</span>`),
    '<span>▨ cordoned (stripes under the lane)</span>',
  ].join('');
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>gpu-reflex run: ${escape(r.scenario.name)}</title>`,
    `<style>${CSS}</style></head><body>`,
    `<h1>gpu-reflex run: ${escape(r.scenario.name)}</h1>`,
    `<p class="desc">${escape(r.scenario.description)}</p>`,
    `<p class="meta">${lanes.length} nodes, ${clockText(end)} of scenario on the ${r.clock} clock, ` +
      `${r.cluster} cluster; hover a mark for what happened and why.</p>`,
    `<p class="verdict${/FAIL/.test(verdict) ? ' fail' : ''}">${escape(verdict)}</p>`,
    `<div class="legend">${legend}</div>`,
    `<div class="axis">${ticks}</div>`,
    `<div class="lanes">${lanes.map((l) => laneHtml(l, end)).join('\n')}</div>`,
    '</body></html>',
    '',
  ].join('\n');
}
