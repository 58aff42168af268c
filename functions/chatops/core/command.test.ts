import { describe, expect, it } from 'vitest';
import { commandOf } from '../webhook.ts';
import { roleOf, ChatOpsConfigSchema } from '../run.ts';
import { parseCommand, roleNeeded } from './command.ts';

describe('chat commands', () => {
  it('reads the command past a mention or a slash command, with --dry-run anywhere', () => {
    expect(parseCommand('@gpu-reflex cordon gpu-3 --dry-run')).toMatchObject({
      ok: true,
      command: { name: 'cordon', node: 'gpu-3', dryRun: true },
    });
    expect(parseCommand('/gpu approve apr-7f3c9a12')).toMatchObject({
      ok: true,
      command: { name: 'approve', id: 'apr-7f3c9a12', dryRun: false },
    });
    expect(parseCommand('')).toMatchObject({ ok: false });
    expect(parseCommand('cordon gpu-3 --force')).toEqual({
      ok: false,
      error: 'unknown flag --force. Usage: cordon NODE [--dry-run]',
      words: ['cordon', 'gpu-3', '--force'],
    });
    expect(parseCommand('approve 42')).toMatchObject({
      ok: false,
      error: '"42" is not an approval id (apr-…). Usage: approve ID [--dry-run]',
    });
  });

  it('asks a viewer only for reading and for dry runs', () => {
    const c = parseCommand('cordon gpu-3');
    expect(c.ok && roleNeeded(c.command)).toBe('operator');
    const d = parseCommand('cordon gpu-3 --dry-run');
    expect(d.ok && roleNeeded(d.command)).toBe('viewer');
  });

  it.each([
    ['quarantine gpu-3 2', { name: 'quarantine', node: 'gpu-3', gpu: '2' }, 'operator'],
    [
      'quarantine gpu-3 GPU-5f2c3a00-8d41-4b7a-9e0f-1c2d3e4f5a6b',
      { name: 'quarantine', gpu: 'GPU-5f2c3a00-8d41-4b7a-9e0f-1c2d3e4f5a6b' },
      'operator',
    ],
    ['mig plan', { name: 'mig', sub: 'plan' }, 'viewer'],
    ['mig apply', { name: 'mig', sub: 'apply' }, 'operator'],
    ['quota show', { name: 'quota', sub: 'show' }, 'viewer'],
    ['quota rollback', { name: 'quota', sub: 'rollback' }, 'operator'],
    ['quota rollback ml', { name: 'quota', sub: 'rollback', namespace: 'ml' }, 'operator'],
    ['pool scale np-a100 12', { name: 'pool', sub: 'scale', pool: 'np-a100', size: 12 }, 'operator'],
  ])('reads "%s" and asks for the role it needs', (text, command, role) => {
    const c = parseCommand(text);
    expect(c).toMatchObject({ ok: true, command: { ...command, dryRun: false } });
    expect(c.ok && roleNeeded(c.command)).toBe(role);
    const dry = parseCommand(`${text} --dry-run`);
    expect(dry.ok && roleNeeded(dry.command)).toBe('viewer');
  });

  it.each([
    ['quarantine gpu-3', 'expected a node and a GPU, got 1 word(s)'],
    ['quarantine gpu-3 gpu0', '"gpu0" is not a GPU index or UUID (GPU-…)'],
    [
      'quarantine GPU_3 0',
      `"GPU_3" is not a node name (lowercase letters, digits, '-' and '.', alphanumeric at both ends)`,
    ],
    ['mig relay', 'expected plan (which idle GPUs would be relaid) or apply (relay them)'],
    ['quota rollback ML_1', '"ML_1" is not a namespace'],
    ['pool scale a100 3', '"a100" is not a node pool id (np…)'],
    ['pool scale np-a -1', '"-1" is not a node count'],
    ['pool scale np-a many', '"many" is not a node count'],
  ])('answers "%s" with what is wrong and the usage', (text, error) => {
    const c = parseCommand(text);
    expect(c.ok).toBe(false);
    expect(!c.ok && c.error).toMatch(new RegExp(`^${error.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\. Usage: `));
  });

  it('raises a command to the role the config requires, never lowers it', () => {
    const c = parseCommand('pool scale np-a 3');
    expect(c.ok && roleNeeded(c.command, { pool: 'admin' })).toBe('admin');
    const d = parseCommand('cordon gpu-3');
    expect(d.ok && roleNeeded(d.command, { cordon: 'viewer' })).toBe('operator');
  });

  it('maps users and channels to roles, first match wins, else the default', () => {
    const config = ChatOpsConfigSchema.parse({
      roles: [
        { match: { platform: 'slack', user: 'U1' }, role: 'admin' },
        { match: { channel: 'C-OPS' }, role: 'operator' },
      ],
      default: 'none',
    });
    expect(roleOf(config, { platform: 'slack', id: 'U1', channel: 'C-OPS' })).toBe('admin');
    expect(roleOf(config, { platform: 'dingtalk', id: 'U1', channel: 'C-OPS' })).toBe('operator');
    expect(roleOf(config, { platform: 'feishu', id: 'x', channel: 'c' })).toBe('none');
  });

  it('takes the user, channel and text out of each platform’s payload', () => {
    expect(
      commandOf(
        'dingtalk',
        JSON.stringify({
          senderStaffId: 'S1',
          senderNick: 'Ann',
          conversationId: 'cid',
          text: { content: ' status ' },
        }),
      ),
    ).toEqual({ who: { platform: 'dingtalk', id: 'S1', name: 'Ann', channel: 'cid' }, text: ' status ' });
    expect(
      commandOf(
        'feishu',
        JSON.stringify({
          schema: '2.0',
          header: {},
          event: {
            sender: { sender_id: { open_id: 'ou_1' } },
            message: { chat_id: 'oc_1', content: '{"text":"@_user_1 status"}' },
          },
        }),
      ),
    ).toEqual({ who: { platform: 'feishu', id: 'ou_1', channel: 'oc_1' }, text: '@_user_1 status' });
    expect(commandOf('feishu', JSON.stringify({ type: 'url_verification', challenge: 'c-1', token: 't' }))).toEqual({
      challenge: 'c-1',
    });
    expect(commandOf('slack', 'text=status')).toBeUndefined();
  });
});
