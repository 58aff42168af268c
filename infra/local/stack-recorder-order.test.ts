import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { EventEnvelope, LocalBus } from './bus/index.ts';
import { StackRecorder } from './stack-recorder.ts';

const example = (name: string) =>
  JSON.parse(
    readFileSync(new URL(`../../events/catalog/${name}.example.json`, import.meta.url), 'utf8'),
  ) as EventEnvelope;

/** What the recorder uses of a bus: the accepted events (and their count) and its delivery reports. */
function fakeBus() {
  const listeners = new Map<string, ((d: unknown) => void)[]>();
  const bus = {
    events: [] as EventEnvelope[],
    get counts() {
      return { events: this.events.length, eventsByDetailType: {}, deadLetters: 0 };
    },
    on(name: string, fn: (d: unknown) => void) {
      listeners.set(name, [...(listeners.get(name) ?? []), fn]);
      return () => undefined;
    },
  };
  const report = (name: string, d: object) => (listeners.get(name) ?? []).forEach((fn) => fn(d));
  return { bus, report };
}

function recorder() {
  const { bus, report } = fakeBus();
  const lines: string[] = [];
  const rec = new StackRecorder(bus as unknown as LocalBus, {
    out: (l) => lines.push(l),
    colour: false,
    sinceStart: () => 6000,
    startedAt: () => 0,
    podName: () => undefined,
    keyOf: new Map(),
  });
  rec.subscribe();
  const who = () =>
    lines.map(
      (l) =>
        l
          .slice(9)
          .split(/\s{2,}/)[0]!
          .trim() +
        ': ' +
        l.slice(25).split('\n')[0],
    );
  return { bus, report, rec, lines, who };
}

const delivered = (result: unknown) => ({ rule: 'r', function: 'remediate', event: {}, attempt: 1, at: 0, result });

describe('the recorder prints causes before their effects', () => {
  it('prints a remediation before the cluster changes it made while it ran', () => {
    const { bus, report, rec, who } = recorder();
    bus.events.push(example('gpu-xid-error'));
    // The function runs: the cluster changes, then it publishes its Remediation, then the bus reports.
    rec.effect({ who: 'cluster', kind: 'cluster', what: '', text: 'node gpu-a100-07 cordoned' });
    rec.effect({ who: 'cluster', kind: 'cluster', what: '', text: 'pod ml-training/llama-ft-worker-3 terminating' });
    bus.events.push(example('remediation'));
    report(
      'delivered',
      delivered({ status: 'done', result: { kind: 'act', action: 'drain-node', phase: 'decided', reason: 'r' } }),
    );
    expect(who().map((l) => l.split(':')[0])).toEqual(['gpu-a100-07', 'remediate', 'cluster', 'cluster']);
    expect(who()[2]).toBe('cluster: node gpu-a100-07 cordoned');
  });

  it('prints a scenario step before the scheduling it caused, at the next flush', () => {
    const { rec, who } = recorder();
    rec.effect({ who: 'cluster', kind: 'cluster', what: '', text: 'pod research/mig-burst-0 scheduled on h100-mig-0' });
    rec.emit({ who: 'scenario', kind: 'note', what: '', text: 'create 8 pods research/mig-burst-*' });
    rec.flushEvents();
    expect(who()).toEqual([
      'scenario: create 8 pods research/mig-burst-*',
      'cluster: pod research/mig-burst-0 scheduled on h100-mig-0',
    ]);
  });

  it('gives a delivery that changed nothing a line, with the reason the function returned', () => {
    const { bus, report, lines } = recorder();
    bus.events.push(example('gpu-xid-error'));
    report(
      'delivered',
      delivered({
        status: 'done',
        result: {
          kind: 'noop',
          action: 'observe',
          phase: 'skipped',
          reason: 'Incident already open (2 occurrences): observe stands',
        },
      }),
    );
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('remediate       no change: observe stands');
    expect(lines[1]).toContain('why: Incident already open (2 occurrences): observe stands');
  });
});

describe('the recorder does not repeat an idle line', () => {
  it('says an idle sweep once per quiet stretch, and again after it did something', () => {
    const { report, lines } = recorder();
    const idle = delivered({ status: 'done', result: { nodes: 0, acted: 0, skipped: [] } });
    for (let i = 0; i < 5; i++) report('delivered', idle);
    expect(lines.filter((l) => l.includes('nothing to do'))).toHaveLength(1);
    report('delivered', delivered({ status: 'done', result: { nodes: 1, acted: 1, skipped: [] } }));
    report('delivered', idle);
    expect(lines.filter((l) => l.includes('nothing to do'))).toHaveLength(2);
  });
});
