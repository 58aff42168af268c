/**
 * The device plugin's own words: its known error lines, read from its pods' logs where the kubelet keeps
 * them, to show a person beside a `Device Plugin Mismatch` (plugin-health.ts).
 */
import { readdir, open } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The plugin's log lines worth showing a person, by what they mean. Matched case-insensitively.
 * - `could not load NVML library`: the plugin's container has no driver library (go-nvlib
 *   pkg/nvlib/info HasNvml; the NVIDIA runtime or CDI not set up for it).
 * - `unresolvable CDI devices`: a CDI device the plugin named has no spec on the node
 *   (container-device-interface pkg/cdi, as the runtime reports it: "failed to inject CDI devices").
 */
export const KNOWN_PLUGIN_ERRORS: readonly RegExp[] = [/could not load NVML library/i, /unresolvable CDI devices/i];

/** How much of each log file's end is read. */
const LOG_TAIL_BYTES = 64 * 1024;

/**
 * The known error lines in the newest logs of the plugin's pods (`<podLogDir>/<prefix>*` directories,
 * `<container>/<n>.log` in each: the kubelet's layout, `<namespace>_<pod>_<uid>`). Unreadable: none.
 */
export async function pluginErrorLines(podLogDir: string, prefix: string): Promise<string[]> {
  const found: string[] = [];
  try {
    const pods = (await readdir(podLogDir)).filter((d) => d.startsWith(prefix)).sort();
    for (const pod of pods) {
      for (const container of await readdir(join(podLogDir, pod)).catch(() => [] as string[])) {
        const dir = join(podLogDir, pod, container);
        for (const file of (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.log'))) {
          for (const line of (await tail(join(dir, file))).split('\n'))
            if (KNOWN_PLUGIN_ERRORS.some((re) => re.test(line))) found.push(criMessage(line).slice(0, 512));
        }
      }
    }
  } catch {
    return []; // no log directory here: nothing known
  }
  return [...new Set(found)].slice(-8);
}

/** The message of a CRI log line (`<time> <stream> <P|F> <message>`, the kubelet's pod log format), else the line. */
export function criMessage(line: string): string {
  const m = /^\S+ (?:stdout|stderr) [PF] (.*)$/.exec(line.trim());
  return (m ? m[1]! : line).trim();
}

async function tail(path: string): Promise<string> {
  const fh = await open(path, 'r').catch(() => undefined);
  if (!fh) return '';
  try {
    const { size } = await fh.stat();
    const len = Math.min(size, LOG_TAIL_BYTES);
    const buf = Buffer.alloc(len);
    await fh.read(buf, 0, len, size - len);
    return buf.toString('utf8');
  } finally {
    await fh.close();
  }
}
