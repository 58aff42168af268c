/**
 * Structured JSON logs, one object per line (what CloudWatch Logs Insights and the local timeline
 * both read). Messages are short phrases; facts go in fields. A port with its implementation beside
 * it, like the clock (clock.ts): the adapters log through it (a notification or a Kubernetes Event
 * that failed), and the kernel and every reflex import it from here, the one logger of the functions;
 * no adapter imports the kernel (test/contract/layers.test.ts).
 */
export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger whose every line also carries `fields` (e.g. the request id). */
  child(fields: Record<string, unknown>): Logger;
}

export type LogSink = (line: Record<string, unknown>) => void;

const stdoutSink: LogSink = (line) => process.stdout.write(JSON.stringify(line) + '\n');

function errorFields(v: unknown): unknown {
  if (!(v instanceof Error)) return v;
  const e = v as Error & { what?: string; status?: number };
  return {
    name: e.name,
    message: e.message,
    ...(e.what ? { what: e.what } : {}),
    ...(e.status ? { status: e.status } : {}),
    ...(e.cause ? { cause: errorFields(e.cause) } : {}),
  };
}

export function createLogger(opts: {
  service: string;
  level?: Level;
  sink?: LogSink;
  now?: () => number;
  fields?: Record<string, unknown>;
}): Logger {
  const min = ORDER[opts.level ?? 'info'];
  const sink = opts.sink ?? stdoutSink;
  const now = opts.now ?? Date.now;
  const base = { service: opts.service, ...opts.fields };
  const write = (level: Level, message: string, fields: Record<string, unknown> = {}) => {
    if (ORDER[level] < min) return;
    const f = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, errorFields(v)]));
    sink({ time: new Date(now()).toISOString(), level, message, ...base, ...f });
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger({ ...opts, fields: { ...opts.fields, ...fields } }),
  };
}

/** Discards everything (tests that do not look at logs). */
export const silentLogger: Logger = createLogger({ service: 'silent', sink: () => {} });
