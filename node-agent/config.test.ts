import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadAgentConfig } from './config.ts';

describe('loadAgentConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const c = loadAgentConfig({});
    expect(c).toMatchObject({
      nodeName: hostname(),
      eventBusName: 'gpu-reflex',
      awsRegion: undefined,
      nvmlLibraryPath: 'libnvidia-ml.so.1',
      sampleIntervalMs: 5000,
      utilizationWindowMs: 60000,
      spoolPath: '/var/lib/gpu-reflex/spool.jsonl',
      spoolMaxBytes: 64 * 1024 * 1024,
      batchDelayMs: 200,
      httpPort: 9400,
      kmsgPath: '/dev/kmsg',
      kmsgCursorPath: '/var/lib/gpu-reflex/spool.jsonl.kmsg.json',
      procRoot: '/proc',
      dryRun: false,
    });
    expect(c.thresholds).toEqual({
      gpuUtilHighPercent: 95,
      gpuUtilHighForMs: 300000,
      fbUsedHighPercent: 90,
      tempWarnC: 80,
      tempCritC: 85,
      tempFromGpu: true,
      powerHighPercent: 90,
      hysteresisPercent: 5,
    });
  });

  it('keeps the kernel-log cursor beside the spool unless KMSG_CURSOR_PATH says where', () => {
    expect(loadAgentConfig({ SPOOL_PATH: '/data/spool.jsonl' }).kmsgCursorPath).toBe('/data/spool.jsonl.kmsg.json');
    expect(loadAgentConfig({ KMSG_CURSOR_PATH: '/data/kmsg.json' }).kmsgCursorPath).toBe('/data/kmsg.json');
  });

  it('reads DELIVERY_STALL_MINUTES: 10 by default, 1 to 1440', () => {
    expect(loadAgentConfig({}).deliveryStallMs).toBe(600_000);
    expect(loadAgentConfig({ DELIVERY_STALL_MINUTES: '3' }).deliveryStallMs).toBe(180_000);
    for (const bad of ['0', '1441', 'soon'])
      expect(() => loadAgentConfig({ DELIVERY_STALL_MINUTES: bad })).toThrow(/DELIVERY_STALL_MINUTES/);
  });

  it('reads the XID aggregation window: 60 s by default, 1 s to 10 min', () => {
    expect(loadAgentConfig({}).xidAggregateWindowMs).toBe(60_000);
    expect(loadAgentConfig({ XID_AGGREGATE_WINDOW_MS: '120000' }).xidAggregateWindowMs).toBe(120_000);
    for (const bad of ['999', '600001', 'soon', '1.5e3x'])
      expect(() => loadAgentConfig({ XID_AGGREGATE_WINDOW_MS: bad })).toThrow(/XID_AGGREGATE_WINDOW_MS/);
  });

  it('returns a frozen object, thresholds included', () => {
    const c = loadAgentConfig({});
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.thresholds)).toBe(true);
  });

  it.each([
    ['false', false],
    ['0', false],
    ['true', true],
    ['yes', true],
  ])('reads DRY_RUN=%s as %s (stringbool, not truthiness)', (raw, expected) => {
    expect(loadAgentConfig({ DRY_RUN: raw }).dryRun).toBe(expected);
  });

  it.each([
    [{ SAMPLE_INTERVAL_MS: 'soon' }, 'SAMPLE_INTERVAL_MS'],
    [{ HTTP_PORT: '70000' }, 'HTTP_PORT'],
    [{ GPU_UTIL_HIGH_PERCENT: '120' }, 'GPU_UTIL_HIGH_PERCENT'],
    [{ DRY_RUN: 'maybe' }, 'DRY_RUN'],
    [{ SPOOL_MAX_BYTES: '10' }, 'SPOOL_MAX_BYTES'],
    [{ TEMP_WARN_C: '90', TEMP_CRIT_C: '85' }, 'TEMP_WARN_C'],
    [{ KUBERNETES_SERVICE_HOST: '10.0.0.1' }, 'NODE_NAME'],
  ])('names the variable at fault: %j', (env, name) => {
    expect(() => loadAgentConfig(env)).toThrow(ConfigError);
    expect(() => loadAgentConfig(env)).toThrow(name);
  });

  it('takes NODE_NAME from the downward API in-cluster', () => {
    expect(loadAgentConfig({ KUBERNETES_SERVICE_HOST: '10.0.0.1', NODE_NAME: 'gpu-node-7' }).nodeName).toBe(
      'gpu-node-7',
    );
  });
});
