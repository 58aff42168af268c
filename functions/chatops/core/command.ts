/**
 * Chat command text → a typed command (pure). `--dry-run` is accepted by every command; a parse
 * error answers with the command's usage, never a stack trace. Who may run what is `roleFor`.
 */
export type Role = 'viewer' | 'operator' | 'admin';
export const ROLE_RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

export type ChatCommand =
  | { name: 'help'; dryRun: boolean }
  | { name: 'status'; node?: string; dryRun: boolean }
  | { name: 'cordon' | 'uncordon' | 'drain'; node: string; dryRun: boolean }
  | { name: 'approve' | 'deny'; id: string; dryRun: boolean }
  /** GPU: an index (`3`) or a UUID (`GPU-…`), checked against the node by the runner. */
  | { name: 'quarantine'; node: string; gpu: string; dryRun: boolean }
  | { name: 'mig'; sub: 'plan' | 'apply'; dryRun: boolean }
  | { name: 'quota'; sub: 'plan' | 'show'; dryRun: boolean }
  | { name: 'quota'; sub: 'rollback'; namespace?: string; dryRun: boolean }
  | { name: 'pool'; sub: 'scale'; pool: string; size: number; dryRun: boolean };

type Bare = ChatCommand extends infer C ? (C extends ChatCommand ? Omit<C, 'dryRun'> : never) : never;

interface Spec {
  usage: string;
  /** The role the command needs; per sub-command where reading and acting share a word. */
  role: Role | ((c: Bare) => Role);
  parse(args: string[]): Bare | string;
}

/**
 * A node's name is a DNS subdomain: at most 253 characters, lowercase alphanumerics, '-' and '.',
 * alphanumeric at both ends of each dot-separated part
 * (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-subdomain-names).
 * Checked before any lookup, so a name the API server could never hold is never sent to it.
 */
export const MAX_NODE_NAME = 253;
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const isNode = (s: string) => s.length <= MAX_NODE_NAME && NODE_NAME.test(s);
/** Why `s` is not a node name, in words. */
const notNode = (s: string) =>
  s.length > MAX_NODE_NAME
    ? `a node name has at most ${MAX_NODE_NAME} characters (${quoted(s)} has ${s.length})`
    : `${quoted(s)} is not a node name (lowercase letters, digits, '-' and '.', alphanumeric at both ends)`;
/** A word as the answer repeats it: quoted, and cut where it is long (a pasted log is not echoed back). */
const cut = (s: string) => (s.length > 64 ? `${s.slice(0, 64)}…` : s);
export const quoted = (s: string) => `"${cut(s)}"`;
const node = (name: 'cordon' | 'uncordon' | 'drain') => (args: string[]) =>
  args.length !== 1
    ? `expected one node name, got ${args.length}`
    : isNode(args[0]!)
      ? { name, node: args[0]! }
      : notNode(args[0]!);
const GPU = /^(\d{1,2}|GPU-[0-9a-fA-F-]{8,64})$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const POOL = /^np[a-z0-9-]*$/;
const decide = (name: 'approve' | 'deny') => (args: string[]) =>
  args.length !== 1
    ? `expected one approval id, got ${args.length}`
    : /^apr-[a-z0-9-]{4,64}$/.test(args[0]!)
      ? { name, id: args[0]! }
      : `${quoted(args[0]!)} is not an approval id (apr-…)`;

export const COMMANDS: Record<ChatCommand['name'], Spec> = {
  help: {
    usage: 'help',
    role: 'viewer',
    parse: (a) => (a.length === 0 ? { name: 'help' } : 'help takes no arguments'),
  },
  status: {
    usage: 'status [NODE]',
    role: 'viewer',
    parse: (a) =>
      a.length === 0
        ? { name: 'status' }
        : a.length !== 1
          ? 'expected at most one node name'
          : isNode(a[0]!)
            ? { name: 'status', node: a[0]! }
            : notNode(a[0]!),
  },
  cordon: { usage: 'cordon NODE [--dry-run]', role: 'operator', parse: node('cordon') },
  uncordon: { usage: 'uncordon NODE [--dry-run]', role: 'operator', parse: node('uncordon') },
  drain: { usage: 'drain NODE [--dry-run]', role: 'operator', parse: node('drain') },
  quarantine: {
    usage: 'quarantine NODE GPU [--dry-run]  (GPU: index or UUID)',
    role: 'operator',
    parse: (a) =>
      a.length !== 2
        ? `expected a node and a GPU, got ${a.length} word(s)`
        : !isNode(a[0]!)
          ? notNode(a[0]!)
          : !GPU.test(a[1]!)
            ? `${quoted(a[1]!)} is not a GPU index or UUID (GPU-…)`
            : { name: 'quarantine', node: a[0]!, gpu: a[1]! },
  },
  quota: {
    usage: 'quota show | quota plan | quota rollback [NAMESPACE] [--dry-run]',
    role: (c) => (c.name === 'quota' && c.sub === 'rollback' ? 'operator' : 'viewer'),
    parse: (a) => {
      if (a.length === 1 && (a[0] === 'plan' || a[0] === 'show')) return { name: 'quota', sub: a[0] };
      if (a[0] === 'rollback' && a.length <= 2)
        return a[1] === undefined
          ? { name: 'quota', sub: 'rollback' }
          : NAMESPACE.test(a[1])
            ? { name: 'quota', sub: 'rollback', namespace: a[1] }
            : `${quoted(a[1])} is not a namespace`;
      return 'expected show, plan or rollback [NAMESPACE]';
    },
  },
  mig: {
    usage: 'mig plan | mig apply [--dry-run]',
    role: (c) => (c.name === 'mig' && c.sub === 'apply' ? 'operator' : 'viewer'),
    parse: (a) =>
      a.length === 1 && (a[0] === 'plan' || a[0] === 'apply')
        ? { name: 'mig', sub: a[0] }
        : 'expected plan (which idle GPUs would be relaid) or apply (relay them)',
  },
  pool: {
    usage: 'pool scale POOL N [--dry-run]  (N: the desired size)',
    role: 'operator',
    parse: (a) =>
      a[0] !== 'scale' || a.length !== 3
        ? 'expected scale, a node pool id and a size'
        : !POOL.test(a[1]!)
          ? `${quoted(a[1]!)} is not a node pool id (np…)`
          : !/^\d{1,4}$/.test(a[2]!)
            ? `${quoted(a[2]!)} is not a node count`
            : { name: 'pool', sub: 'scale', pool: a[1]!, size: Number(a[2]) },
  },
  approve: { usage: 'approve ID [--dry-run]', role: 'operator', parse: decide('approve') },
  deny: { usage: 'deny ID [--dry-run]', role: 'operator', parse: decide('deny') },
};

/**
 * Commands that can outlast Slack's 3 seconds (evictions, a MIG round, a cloud call, quota
 * rewrites, remediation): answered at once and finished by chatops-worker. Reads, plans and
 * approve/deny stay synchronous.
 */
export function isLong(c: ChatCommand): boolean {
  return (
    c.name === 'drain' ||
    c.name === 'quarantine' ||
    c.name === 'pool' ||
    (c.name === 'mig' && c.sub === 'apply') ||
    (c.name === 'quota' && c.sub === 'rollback')
  );
}

export function helpText(): string {
  return [
    'gpu-reflex commands (every one takes --dry-run):',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage}`),
  ].join('\n');
}

/** The most characters a command's text may have. */
export const MAX_COMMAND_TEXT = 512;

export type Parsed =
  { ok: true; command: ChatCommand; words: string[] } | { ok: false; error: string; words: string[] };

/** `/gpu cordon gpu-node-3 --dry-run`, `@bot status`: the command word, its arguments, flags. */
export function parseCommand(text: string): Parsed {
  // The longest command (a quarantine by GPU UUID of a 253-character node) is well under this:
  // anything longer is refused before it is split, looked up or logged whole.
  if (text.length > MAX_COMMAND_TEXT)
    return {
      ok: false,
      error: `that is ${text.length} characters; a command has at most ${MAX_COMMAND_TEXT}. ${helpText()}`,
      words: [],
    };
  // Mentions (`@gpu-reflex`) are not words of the command; a leading `/gpu` is the slash command.
  const words = text
    .trim()
    .split(/\s+/)
    .filter((w) => w !== '' && !w.startsWith('@'));
  const cleaned = words[0]?.startsWith('/') ? words.slice(1) : words;
  const dryRun = cleaned.includes('--dry-run');
  const unknownFlag = cleaned.find((w) => w.startsWith('--') && w !== '--dry-run');
  const [name, ...args] = cleaned.filter((w) => w !== '--dry-run');
  if (!name) return { ok: false, error: helpText(), words: cleaned };
  const spec = COMMANDS[name.toLowerCase() as ChatCommand['name']];
  if (!spec) return { ok: false, error: `unknown command ${quoted(name)}.\n${helpText()}`, words: cleaned };
  if (unknownFlag)
    return { ok: false, error: `unknown flag ${cut(unknownFlag)}. Usage: ${spec.usage}`, words: cleaned };
  const r = spec.parse(args);
  if (typeof r === 'string') return { ok: false, error: `${r}. Usage: ${spec.usage}`, words: cleaned };
  return { ok: true, command: { ...r, dryRun }, words: cleaned };
}

/**
 * The role a command needs: its own, raised by the config's `require` (never lowered); a dry run
 * of any command needs only a viewer.
 */
export function roleNeeded(c: ChatCommand, require: Partial<Record<ChatCommand['name'], Role>> = {}): Role {
  if (c.dryRun) return 'viewer';
  const role = COMMANDS[c.name].role;
  const own = typeof role === 'function' ? role(c) : role;
  const raised = require[c.name];
  return raised && ROLE_RANK[raised] > ROLE_RANK[own] ? raised : own;
}
