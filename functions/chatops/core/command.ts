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
  | { name: 'quota' | 'mig'; sub: 'plan'; dryRun: boolean };

interface Spec {
  usage: string;
  role: Role;
  parse(args: string[]): Omit<ChatCommand, 'dryRun'> | string;
}

const NODE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const node = (name: 'cordon' | 'uncordon' | 'drain') => (args: string[]) =>
  args.length !== 1 ? `expected one node name, got ${args.length}` : NODE.test(args[0]!) ? { name, node: args[0]! } : `"${args[0]}" is not a node name`;
const decide = (name: 'approve' | 'deny') => (args: string[]) =>
  args.length !== 1 ? `expected one approval id, got ${args.length}` : /^apr-[a-z0-9-]{4,64}$/.test(args[0]!) ? { name, id: args[0]! } : `"${args[0]}" is not an approval id (apr-…)`;

export const COMMANDS: Record<ChatCommand['name'], Spec> = {
  help: { usage: 'help', role: 'viewer', parse: (a) => (a.length === 0 ? { name: 'help' } : 'help takes no arguments') },
  status: { usage: 'status [NODE]', role: 'viewer', parse: (a) => (a.length === 0 ? { name: 'status' } : a.length === 1 && NODE.test(a[0]!) ? { name: 'status', node: a[0]! } : 'expected at most one node name') },
  cordon: { usage: 'cordon NODE [--dry-run]', role: 'operator', parse: node('cordon') },
  uncordon: { usage: 'uncordon NODE [--dry-run]', role: 'operator', parse: node('uncordon') },
  drain: { usage: 'drain NODE [--dry-run]', role: 'operator', parse: node('drain') },
  quota: { usage: 'quota plan', role: 'viewer', parse: (a) => (a.length === 1 && a[0] === 'plan' ? { name: 'quota', sub: 'plan' } : 'the quota command here is "quota plan" (show the quotas the rewriter would write)') },
  mig: { usage: 'mig plan', role: 'viewer', parse: (a) => (a.length === 1 && a[0] === 'plan' ? { name: 'mig', sub: 'plan' } : 'the mig command here is "mig plan" (which idle GPUs would be relaid)') },
  approve: { usage: 'approve ID [--dry-run]', role: 'operator', parse: decide('approve') },
  deny: { usage: 'deny ID [--dry-run]', role: 'operator', parse: decide('deny') },
};

export function helpText(): string {
  return ['gpu-reflex commands (every one takes --dry-run):', ...Object.values(COMMANDS).map((c) => `  ${c.usage}`)].join('\n');
}

export type Parsed = { ok: true; command: ChatCommand; words: string[] } | { ok: false; error: string; words: string[] };

/** `/gpu cordon gpu-node-3 --dry-run`, `@bot status`: the command word, its arguments, flags. */
export function parseCommand(text: string): Parsed {
  // Mentions (`@gpu-reflex`) are not words of the command; a leading `/gpu` is the slash command.
  const words = text.trim().split(/\s+/).filter((w) => w !== '' && !w.startsWith('@'));
  const cleaned = words[0]?.startsWith('/') ? words.slice(1) : words;
  const dryRun = cleaned.includes('--dry-run');
  const unknownFlag = cleaned.find((w) => w.startsWith('--') && w !== '--dry-run');
  const [name, ...args] = cleaned.filter((w) => w !== '--dry-run');
  if (!name) return { ok: false, error: helpText(), words: cleaned };
  const spec = COMMANDS[name.toLowerCase() as ChatCommand['name']];
  if (!spec) return { ok: false, error: `unknown command "${name}".\n${helpText()}`, words: cleaned };
  if (unknownFlag) return { ok: false, error: `unknown flag ${unknownFlag}. Usage: ${spec.usage}`, words: cleaned };
  const r = spec.parse(args);
  if (typeof r === 'string') return { ok: false, error: `${r}. Usage: ${spec.usage}`, words: cleaned };
  return { ok: true, command: { ...r, dryRun } as ChatCommand, words: cleaned };
}

/** The role a command needs; a dry run of a mutating command needs only a viewer. */
export function roleNeeded(c: ChatCommand): Role {
  return c.dryRun ? 'viewer' : COMMANDS[c.name].role;
}
