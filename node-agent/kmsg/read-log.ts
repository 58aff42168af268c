import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../clock.ts';

/**
 * Streams the lines of a kernel log: `/dev/kmsg` or any file. The file is opened non-blocking and
 * read in a loop, so no libuv pool thread ever sits blocked in read() on /dev/kmsg (the NVML event
 * waiter needs those threads). With `follow`, EOF and EAGAIN mean "wait `pollMs` and read again"
 * (tail -f, or new kernel records); without it they end the stream, which for /dev/kmsg means
 * "what the ring buffer holds now".
 *
 * /dev/kmsg specifics: each read returns one record; EPIPE means records were overwritten before
 * we read them, and the next read continues with the oldest one still there.
 */

/** The part of a file handle the reader uses; tests inject their own. */
export interface LogHandle {
  /** Bytes read into buf (0 = EOF); throws errors carrying `code` (EAGAIN, EPIPE, ...). */
  read(buf: Buffer): Promise<number>;
  close(): Promise<void>;
}

export interface ReadLogOptions {
  follow?: boolean;
  pollMs?: number;
  signal?: AbortSignal;
  openLog?: (path: string) => Promise<LogHandle>;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

async function openNonBlocking(path: string): Promise<LogHandle> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  return {
    read: async (buf) => (await fh.read(buf, 0, buf.length, null)).bytesRead,
    close: () => fh.close(),
  };
}

const realSleep = (ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }).catch(() => undefined);

/**
 * Splits a stream of chunks into lines (without the newline); a final partial line is kept.
 * Linear in the input: only each new chunk is searched for a newline, and a long line is joined
 * once from its pieces (appending to one string and searching it from the start made a 50 MB line
 * cost depth² — 65 s). Buffers are decoded as one UTF-8 stream, so a character split across two
 * reads stays whole.
 */
export async function* splitLines(chunks: AsyncIterable<string | Buffer>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let pieces: string[] = [];
  const take = function* (text: string): Generator<string> {
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      pieces.push(text.slice(start, nl));
      yield pieces.join('');
      pieces = [];
      start = nl + 1;
    }
    if (start < text.length) pieces.push(text.slice(start));
  };
  for await (const chunk of chunks) yield* take(typeof chunk === 'string' ? chunk : decoder.write(chunk));
  yield* take(decoder.end());
  const last = pieces.join('');
  if (last !== '') yield last;
}

async function* chunks(path: string, options: ReadLogOptions): AsyncGenerator<Buffer> {
  const { follow = false, pollMs = 500, signal } = options;
  const sleep = options.sleep ?? realSleep;
  const handle = await (options.openLog ?? openNonBlocking)(path);
  // 64 KiB: a /dev/kmsg read with a buffer smaller than the record fails with EINVAL.
  const buf = Buffer.alloc(64 * 1024);
  try {
    while (!signal?.aborted) {
      let n: number;
      try {
        n = await handle.read(buf);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === 'EPIPE') continue;
        if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw err;
        n = 0;
      }
      if (n > 0) {
        yield Buffer.from(buf.subarray(0, n));
        continue;
      }
      if (!follow) return;
      await sleep(pollMs, signal);
    }
  } finally {
    await handle.close();
  }
}

/** Lines of `path`, following it when asked. Stops when `signal` aborts. */
export function readLogLines(path: string, options: ReadLogOptions = {}): AsyncGenerator<string> {
  return splitLines(chunks(path, options));
}

/**
 * Lets the agent ask the kernel-log follower to read, now, what the kernel has logged so far, and
 * wait until every such line has been handed over. The follower reads /dev/kmsg between sleeps of
 * `pollMs`; NVML delivers an XID within milliseconds of the driver logging it, so without this the
 * NVML sighting always wins the race and the kernel line — the only one naming the pid, the process
 * and an NVLink5 XID's Fatal/Nonfatal — arrives as a duplicate and is dropped (seen on a real H200,
 * docs/node-agent.md "Read on a real driver").
 *
 * Pass `sleep` to readLogLines: where the follower sleeps it has read everything there was, so
 * that is where waiting callers are released, and a catch-up wakes it. Its poll sleep and the
 * catch-up's timeout are timers of the agent's one clock (node-agent/clock.ts).
 */
export class KernelLogCatchUp {
  private wake: (() => void) | undefined;
  private waiters: (() => void)[] = [];
  private following = false;
  private over = false;

  constructor(private readonly clock: Pick<Clock, 'setTimer'>) {}

  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> => {
    this.following = true;
    for (const release of this.waiters.splice(0)) release();
    if (signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        cancel();
        signal?.removeEventListener('abort', done);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const cancel = this.clock.setTimer(ms, done);
      signal?.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  };

  /** A follower is reading the log (it has read the ring buffer it found at start). */
  get isFollowing(): boolean {
    return this.following;
  }

  /** The follower ended (the log unreadable, or the agent stopping): XIDs reach the agent from NVML only. */
  get ended(): boolean {
    return this.over;
  }

  /** The follower ended (or the log is unreadable): nothing to wait for any more. */
  stopped(): void {
    this.following = false;
    this.over = true;
    for (const release of this.waiters.splice(0)) release();
  }

  /**
   * true once the follower has read everything logged before this call; false at once when no
   * follower is reading (not started, still reading the old ring buffer, or stopped), or after
   * `timeoutMs` (the caller goes on without the kernel's line).
   */
  catchUp(timeoutMs: number): Promise<boolean> {
    if (!this.following) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const finish = (ok: boolean) => {
        if (settled) return;
        settled = true;
        cancel();
        resolve(ok);
      };
      const cancel = this.clock.setTimer(timeoutMs, () => finish(false));
      this.waiters.push(() => finish(this.following));
      this.wake?.();
    });
  }
}
