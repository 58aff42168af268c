import { describe, expect, it } from 'vitest';
import { commandOf } from '../webhook.ts';
import { roleOf, ChatOpsConfigSchema } from '../run.ts';
import { parseCommand, roleNeeded } from './command.ts';

describe('chat commands', () => {
  it('reads the command past a mention or a slash command, with --dry-run anywhere', () => {
    expect(parseCommand('@gpu-reflex cordon gpu-3 --dry-run')).toMatchObject({ ok: true, command: { name: 'cordon', node: 'gpu-3', dryRun: true } });
    expect(parseCommand('/gpu approve apr-7f3c9a12')).toMatchObject({ ok: true, command: { name: 'approve', id: 'apr-7f3c9a12', dryRun: false } });
    expect(parseCommand('')).toMatchObject({ ok: false });
    expect(parseCommand('cordon gpu-3 --force')).toEqual({ ok: false, error: 'unknown flag --force. Usage: cordon NODE [--dry-run]', words: ['cordon', 'gpu-3', '--force'] });
    expect(parseCommand('approve 42')).toMatchObject({ ok: false, error: '"42" is not an approval id (apr-…). Usage: approve ID [--dry-run]' });
  });

  it('asks a viewer only for reading and for dry runs', () => {
    const c = parseCommand('cordon gpu-3');
    expect(c.ok && roleNeeded(c.command)).toBe('operator');
    const d = parseCommand('cordon gpu-3 --dry-run');
    expect(d.ok && roleNeeded(d.command)).toBe('viewer');
  });

  it('maps users and channels to roles, first match wins, else the default', () => {
    const config = ChatOpsConfigSchema.parse({ roles: [{ match: { platform: 'slack', user: 'U1' }, role: 'admin' }, { match: { channel: 'C-OPS' }, role: 'operator' }], default: 'none' });
    expect(roleOf(config, { platform: 'slack', id: 'U1', channel: 'C-OPS' })).toBe('admin');
    expect(roleOf(config, { platform: 'dingtalk', id: 'U1', channel: 'C-OPS' })).toBe('operator');
    expect(roleOf(config, { platform: 'feishu', id: 'x', channel: 'c' })).toBe('none');
  });

  it('takes the user, channel and text out of each platform’s payload', () => {
    expect(commandOf('dingtalk', JSON.stringify({ senderStaffId: 'S1', senderNick: 'Ann', conversationId: 'cid', text: { content: ' status ' } }))).toEqual({ who: { platform: 'dingtalk', id: 'S1', name: 'Ann', channel: 'cid' }, text: ' status ' });
    expect(commandOf('feishu', JSON.stringify({ schema: '2.0', header: {}, event: { sender: { sender_id: { open_id: 'ou_1' } }, message: { chat_id: 'oc_1', content: '{"text":"@_user_1 status"}' } } }))).toEqual({ who: { platform: 'feishu', id: 'ou_1', channel: 'oc_1' }, text: '@_user_1 status' });
    expect(commandOf('feishu', JSON.stringify({ type: 'url_verification', challenge: 'c-1', token: 't' }))).toEqual({ challenge: 'c-1' });
    expect(commandOf('slack', 'text=status')).toBeUndefined();
  });
});
