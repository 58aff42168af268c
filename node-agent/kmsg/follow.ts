/**
 * The kernel log followed for XIDs and SXids (agent-runtime.ts runs it when KMSG_PATH can be read),
 * skipping what the ring buffer held before the agent started.
 */
import { readFile } from 'node:fs/promises';
import type { Agent } from '../agent.ts';
import type { PublisherLog } from '../publisher/types.ts';
import { readLogLines, type KernelLogCatchUp } from './read-log.ts';

/** /dev/kmsg records carry microseconds since boot: `6,1234,5678901,-;NVRM: Xid ...`. */
export function kmsgRecordBefore(line: string, sinceBootUs: number): boolean {
  const m = /^\d+,\d+,(\d+),[^;]*;/.exec(line);
  return m !== null && Number(m[1]) < sinceBootUs;
}

async function uptimeUs(): Promise<number> {
  const text = await readFile('/proc/uptime', 'utf8').catch(() => '0');
  return Math.floor(Number.parseFloat(text) * 1e6) || 0;
}

/**
 * Follows the kernel log. /dev/kmsg starts with the whole ring buffer: records from before the
 * agent started were reported by the previous run (or predate it) and are skipped, or every
 * restart would re-publish every XID since boot.
 */
export async function followKernelLog(
  agent: Agent,
  path: string,
  stop: AbortSignal,
  log: PublisherLog,
  catchUp: KernelLogCatchUp,
): Promise<void> {
  const startedUs = await uptimeUs();
  try {
    for await (const line of readLogLines(path, { follow: true, signal: stop, sleep: catchUp.sleep })) {
      if (kmsgRecordBefore(line, startedUs)) continue;
      try {
        agent.onKernelLine(line);
      } catch (err) {
        // One line the agent cannot turn into an event must not stop the follower.
        log.error('kernel-log line not published', {
          line: line.slice(0, 300),
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    log.warn('kernel log not readable; XIDs come from NVML only', {
      path,
      error: code ?? String(err),
      ...(code === 'EACCES' || code === 'EPERM' ? { hint: 'reading /dev/kmsg needs CAP_SYSLOG' } : {}),
    });
  } finally {
    catchUp.stopped();
  }
}
