import { afterEach, expect, it } from 'vitest';
import { openMockNvml } from '../../test/support/mock-nvml.ts';
import type { NvmlEventWatcher } from '../nvml/events.ts';
import type { Nvml } from '../nvml/nvml.ts';
import { XidDeduper } from './dedupe.ts';
import { parseXidLine } from './parse-xid.ts';

let nvml: Nvml | undefined;
let watcher: NvmlEventWatcher | undefined;
afterEach(async () => {
  await watcher?.close();
  nvml?.close();
});

it('pairs an NVML XID event with the kernel log line for the same GPU', async () => {
  const s = await openMockNvml('dgx-a100-8x.json');
  nvml = s.nvml;
  watcher = nvml.events();
  const dedupe = new XidDeduper({ windowMs: 30_000, now: () => 0 });
  s.mock.injectXid(0, 79);
  const event = await watcher.wait(0);
  const line = parseXidLine(
    '[8812.004218] NVRM: Xid (PCI:0000:07:00): 79, pid=1234, name=python, GPU has fallen off the bus.',
  );
  if (event?.kind !== 'event' || event.xid === undefined || !line) throw new Error('expected both sightings');
  expect(line.pci).toBe(event.pciBusId);
  expect(dedupe.admit(event.pciBusId, event.xid, 'nvml')).toBe(true);
  expect(dedupe.admit(line.pci, line.xid, 'kmsg')).toBe(false);
});
