/**
 * The ACK GPU device plugin's unhealthy-devices file as the simulated plugin and the simulated
 * other writers see it, written again here from Alibaba Cloud's documentation (never the node
 * agent's code, so the simulation cannot agree with an agent bug):
 *
 * - "GPU device plugin related operations" (ACK docs): ack-nvidia-device-plugin ≥ 0.9.1 isolates the
 *   devices listed in `/etc/nvidia-device-plugin/unhealthyDevices.json`, `{"index": ["0", "3"],
 *   "uuid": ["GPU-…"]}`, either key per device; saving the file takes effect, removing the entry
 *   returns the device. A file that is missing or not JSON isolates nothing.
 * - "GPU automatic isolation feature changes" (Alibaba's notice, 2026): before ACK NPD 1.2.35, NPD
 *   wrote the file itself on its own detections, replacing what was there. That is the adversity
 *   `fenceFile` steps script (another writer: NPD, or a person with an editor).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where a simulated node's file lives (its host path under the node's directory). */
export function fenceFilePath(files: { dir: string }): string {
  return join(files.dir, 'etc/nvidia-device-plugin/unhealthyDevices.json');
}

export interface UnhealthyDevices {
  index: string[];
  uuid: string[];
}

/** What the plugin reads: entries under either key; anything unreadable lists nothing. */
export function readUnhealthyDevices(path: string): UnhealthyDevices {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return { index: [], uuid: [] };
  }
  const o = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  return { index: list(o.index), uuid: list(o.uuid) };
}

/** Another writer replaces the whole file with `content` (what NPD before 1.2.35 did). */
export function replaceUnhealthyDevices(path: string, content: Partial<UnhealthyDevices>): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.other-writer`;
  writeFileSync(
    tmp,
    JSON.stringify({
      ...(content.index ? { index: content.index } : {}),
      ...(content.uuid ? { uuid: content.uuid } : {}),
    }),
  );
  renameSync(tmp, path);
}
