/**
 * The health rules of a GPU's links (health.ts runs them at each sample): the PCIe link below what it
 * can do, the NVLink fabric's registration, NVLink error rates over the last minute, NVLinks down.
 */
import { event, type HealthContext, type HealthEvent, type Level } from './health-level.ts';
import type { GpuReading, GpuRef } from './reading.ts';

export function pcie(h: HealthContext, r: GpuReading, gpu: GpuRef): HealthEvent[] {
  const key = `${r.uuid}/pcie-link-degraded`;
  const s = h.state.get(key) ?? { level: 0 as Level };
  const { gen, maxGen, width, maxWidth } = r.pcieLink!;
  const narrow = width < maxWidth;
  const slow = gen < maxGen;
  // An idle GPU lowers its link speed on purpose, so a slow link is a finding only while the GPU
  // is busy; once found, it stays until the link runs at full speed again (idle says nothing).
  const busy = (r.utilPercent ?? 0) >= h.t.pcieBusyPercent;
  const level: Level = narrow || (slow && (busy || s.level !== 0)) ? 'warning' : 0;
  if (level === s.level) return [];
  h.state.set(key, { level });
  const parts = [narrow ? `x${width} of x${maxWidth}` : '', slow ? `Gen${gen} of Gen${maxGen}` : ''].filter(Boolean);
  return [
    event(
      gpu,
      'pcie-link-degraded',
      level,
      level
        ? `PCIe link degraded: ${parts.join(', ')}${slow && busy ? ` at ${r.utilPercent}% utilization` : ''}`
        : `PCIe link back to Gen${gen} x${width}`,
      { value: width, threshold: maxWidth, unit: 'lanes' },
    ),
  ];
}

export function fabric(h: HealthContext, r: GpuReading, gpu: GpuRef, now: number): HealthEvent[] {
  const key = `${r.uuid}/fabric`;
  const s = h.state.get(key) ?? { level: 0 as Level };
  const f = r.fabric!;
  let level: Level = 0;
  let message = 'fabric registered';
  let since: number | undefined;
  if (f.state === 'completed') {
    if (f.status !== undefined && f.status !== 0) {
      level = 'critical';
      message =
        `fabric registration failed: ${f.statusName ?? `NVML error ${f.status}`} (is ` +
        `nvidia-fabricmanager running?)`;
    } else if (f.degradedBandwidth) {
      level = 'warning';
      message = 'fabric registered with degraded NVLink bandwidth';
    }
  } else {
    since = s.since ?? now;
    const waited = now - since;
    if (waited >= h.t.fabricGraceMs) {
      level = 'critical';
      message =
        `fabric not ready for ${Math.round(waited / 60_000)} min (probe ${f.state}): CUDA work fails on ` +
        `this GPU until it registers`;
    } else {
      level = s.level; // still within the grace time: no news either way
    }
  }
  h.state.set(key, { level, ...(since === undefined ? {} : { since }) });
  if (level === s.level) return [];
  return [event(gpu, 'fabric', level, message)];
}

/**
 * NVLink error rates over the last minute: any link recovery (a link went down and came back), or
 * CRC errors or replays above their per-minute limits. Counters that went down (a GPU reset clears
 * them) start a new count; the condition clears when a whole minute is quiet again.
 */
export function nvlinkErrors(h: HealthContext, r: GpuReading, gpu: GpuRef, now: number): HealthEvent[] {
  const c = r.nvlinkErrors!;
  // The samples of the last minute, and the newest one before it: the count's baseline.
  const all = h.linkHistory.get(r.uuid) ?? [];
  const seen = all.slice(
    Math.max(
      0,
      all.findLastIndex((h) => now - h.at > 60_000),
    ),
  );
  const last = seen.at(-1);
  if (
    last &&
    (c.crcFlit < last.c.crcFlit ||
      c.crcData < last.c.crcData ||
      c.replay < last.c.replay ||
      c.recovery < last.c.recovery)
  )
    seen.length = 0;
  seen.push({ at: now, c });
  h.linkHistory.set(r.uuid, seen);
  const first = seen[0]!;
  const crc = c.crcFlit + c.crcData - (first.c.crcFlit + first.c.crcData);
  const replay = c.replay - first.c.replay;
  const recovery = c.recovery - first.c.recovery;
  const parts = [
    recovery > 0 ? `${recovery} link recover${recovery === 1 ? 'y' : 'ies'} (a link went down and came back)` : '',
    crc > h.t.nvlinkCrcPerMinute ? `${crc} CRC errors (limit ${h.t.nvlinkCrcPerMinute})` : '',
    replay > h.t.nvlinkReplayPerMinute ? `${replay} replays (limit ${h.t.nvlinkReplayPerMinute})` : '',
  ].filter(Boolean);
  const key = `${r.uuid}/nvlink-errors`;
  const prev = h.state.get(key) ?? { level: 0 as Level };
  const level: Level = parts.length > 0 ? 'warning' : 0;
  // Cleared only by a quiet minute: the window must span one before "no errors" means anything.
  if (level === 0 && prev.level !== 0 && now - first.at < 60_000) return [];
  if (level === prev.level) return [];
  h.state.set(key, { level });
  return [
    event(
      gpu,
      'nvlink-errors',
      level,
      level ? `NVLink errors in the last minute: ${parts.join(', ')}` : 'NVLink error rates back to normal',
      { value: crc + replay + recovery, unit: 'errors/min' },
    ),
  ];
}

export function nvlink(h: HealthContext, r: GpuReading, gpu: GpuRef): HealthEvent[] {
  // Only links that were ever up count: unused links are always inactive.
  const key = `${r.uuid}/nvlink-down`;
  const s = h.state.get(key) ?? { level: 0 as Level, last: 0 };
  let everUp = s.last ?? 0;
  r.nvlinkActive!.forEach((up, i) => {
    if (up) everUp |= 1 << i;
  });
  const down = r.nvlinkActive!.flatMap((up, i) => (!up && everUp & (1 << i) ? [i] : []));
  const level: Level = down.length ? 'critical' : 0;
  h.state.set(key, { level, last: everUp });
  if (level === s.level) return [];
  return [
    event(gpu, 'nvlink-down', level, down.length ? `NVLink ${down.join(', ')} down` : 'all NVLinks up again', {
      value: down.length,
      unit: 'links',
    }),
  ];
}
