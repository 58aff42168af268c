/**
 * Names for the pods the agent knows by UID (from cgroups), for dcgm-exporter's `namespace`, `pod`
 * and `container` labels: the kubelet keeps each pod's logs under `/var/log/pods/<namespace>_<pod>_<uid>/`,
 * one directory per container inside. Node-local (a read-only hostPath), no API access, no runtime
 * socket. A directory that cannot be read gives no names (series carry `pod_uid` only), never an error.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { PodName, PodNames } from '../dcgm.ts';

/** `<namespace>_<pod>_<uid>`: namespaces and pod names cannot hold `_`, so the split is exact. */
const POD_DIR = new RegExp(
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)_([a-z0-9]([-a-z0-9.]*[a-z0-9])?)_/.source +
    /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.source,
);

export function kubeletLogPodNames(dir: string): PodNames {
  return {
    async lookup(uids) {
      const want = new Set(uids);
      const out = new Map<string, PodName>();
      let entries: string[];
      try {
        entries = await readdir(dir);
      } catch {
        return out;
      }
      for (const e of entries) {
        const m = POD_DIR.exec(e);
        if (!m || !want.has(m[5]!)) continue;
        const containers = await readdir(join(dir, e)).catch(() => [] as string[]);
        // One container: it is the one the GPU process belongs to; several: not told apart here.
        out.set(m[5]!, {
          namespace: m[1]!,
          pod: m[3]!,
          ...(containers.length === 1 ? { container: containers[0]! } : {}),
        });
      }
      return out;
    },
  };
}
