import { describe, expect, it } from 'vitest';
import { healthEvent, InvalidEventError, inventoryEvent, utilizationEvent, xidEvent } from './events.ts';

const gpu = {
  index: 3,
  uuid: 'GPU-5f2c3a1e-8d41-4b7a-9e0f-1c2d3e4f5a6b',
  pciBusId: '00000000:3B:00.0',
  name: 'NVIDIA A100-SXM4-80GB',
};
const at = Date.parse('2026-11-21T03:02:45.120Z');

describe('agent events', () => {
  it('gives the same observation the same event id, and a different one a different id', () => {
    const o = {
      gpu,
      xid: 79,
      via: 'nvml' as const,
      pid: 1,
      process: 'python',
      message: 'GPU has fallen off the bus',
      podUids: ['7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31'],
    };
    const a = xidEvent('gpu-a100-07', at, o);
    expect(a.detail.eventId).toBe(xidEvent('gpu-a100-07', at, o).detail.eventId);
    expect(a.detail.eventId).not.toBe(xidEvent('gpu-a100-07', at + 1, o).detail.eventId);
    expect(a).toMatchObject({ source: 'gpu-reflex.node-agent', detailType: 'GPU XID Error', priority: 'critical' });
    expect(a.detail.pods).toEqual([{ uid: '7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31' }]);
  });

  it('refuses to build an event the catalog would reject', () => {
    expect(() =>
      xidEvent('Not A Node', at, { gpu, xid: 79, via: 'nvml', pid: null, process: null, message: '', podUids: [] }),
    ).toThrow(InvalidEventError);
    expect(() =>
      xidEvent('n1', at, {
        gpu: { ...gpu, uuid: 'nope' },
        xid: 79,
        via: 'nvml',
        pid: null,
        process: null,
        message: '',
        podUids: [],
      }),
    ).toThrow(/detail\.gpu\.uuid/);
  });

  it('ranks events so the spool can drop utilization first and never XIDs or health alarms', () => {
    expect(
      healthEvent('n1', at, { gpu, condition: 'temperature', state: 'firing', severity: 'critical', message: 'hot' })
        .priority,
    ).toBe('critical');
    expect(
      healthEvent('n1', at, { gpu, condition: 'utilization-high', state: 'firing', severity: 'info', message: 'busy' })
        .priority,
    ).toBe('normal');
    expect(inventoryEvent('n1', at, { driverVersion: '550.54.14', gpus: [] }).priority).toBe('normal');
    expect(
      utilizationEvent('n1', at, {
        windowStart: '2026-11-21T03:01:45.120Z',
        windowEnd: '2026-11-21T03:02:45.120Z',
        samples: 1,
        gpus: [],
      }).priority,
    ).toBe('bulk');
  });
});
