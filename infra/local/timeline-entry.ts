/**
 * The live timeline of the local stack: one line per thing a component did, in the order it
 * happened, stamped with scenario time. Entries come only from what was observed — events the bus
 * accepted, its deliveries and failures, Remediation events the functions published, and changes
 * the cluster stored — never from what the scenario intended. Pure formatting; the stack collects.
 */
export type EntryKind = 'event' | 'action' | 'failure' | 'cluster' | 'gap' | 'note' | 'stack';

export interface TimelineEntry {
  /** Milliseconds since the scenario started. */
  atMs: number;
  /** Who: a node name, a function name, `cluster`, `scenario`, `stack`. */
  who: string;
  kind: EntryKind;
  /** Detail-type for events; short label otherwise. */
  what: string;
  text: string;
  /** Why it happened (a remediation's reason): printed whole, wrapped on indented lines below. */
  why?: string;
}

const COLOURS: Record<EntryKind, string> = {
  event: '36',
  action: '32',
  failure: '31',
  cluster: '33',
  gap: '35',
  note: '2',
  stack: '2',
};

/** The line that starts a run: how long, on which clock, and how it ends. */
export function runningText(durationMs: number, clock: 'wall' | 'virtual'): string {
  if (clock === 'virtual') return `running ${durationMs / 1000}s of scenario on the virtual clock`;
  if (!Number.isFinite(durationMs)) return 'running until Ctrl-C, on the wall clock';
  return `running ${durationMs / 1000}s of scenario on the wall clock (Ctrl-C ends it)`;
}

/** Where the simulated cluster's kubeconfig is, so a user can look at it while the stack runs. */
export function kubeconfigText(path: string): string {
  return `  kubeconfig: ${path} (while it runs: kubectl --kubeconfig ${path} get nodes,pods -A)`;
}

/** `00:08.2` */
export function clockText(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  const m = Math.floor(s / 60);
  return `${String(m).padStart(2, '0')}:${(s - m * 60).toFixed(1).padStart(4, '0')}`;
}

/** Width a timeline line is wrapped to; the time and who columns take the first 25. */
export const LINE_WIDTH = 100;
const INDENT = ' '.repeat(25);

/** Words of `text` in lines of at most `width` (a longer word gets a line of its own). */
export function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** The entry's line, then its `why` in full on indented lines (`why: …`), never cut. */
export function formatEntry(e: TimelineEntry, colour: boolean): string {
  const lines = [`${clockText(e.atMs)}  ${e.who.padEnd(14)}  ${e.what ? `${e.what}  ` : ''}${e.text}`];
  if (e.why) {
    const wrapped = wrapWords(e.why, LINE_WIDTH - INDENT.length - 5);
    wrapped.forEach((l, i) => lines.push(`${INDENT}${i === 0 ? 'why: ' : '     '}${l}`));
  }
  return lines.map((line) => (colour ? `\u001b[${COLOURS[e.kind]}m${line}\u001b[0m` : line)).join('\n');
}
