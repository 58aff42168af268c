/**
 * What a (verified) Slack form body says, pure: a slash command (`user_id`, `channel_id`, `text`,
 * `response_url`) or an interactive payload (`payload=` JSON, `type: block_actions`, `user`,
 * `channel` or `container.channel_id`, `actions[]`, `response_url`). A button's `value` is the
 * command it stands for (`approve apr-…`, adapters/chat/notifier.ts): a press runs exactly what
 * typing it would.
 */

export interface SlackSaid {
  user: { id: string; name?: string };
  channel: string;
  text: string;
  /** Where Slack takes a later answer (30 min, five posts); absent in a hand-made request. */
  responseUrl?: string;
  /** Set for a button press: the approval it decides. */
  button?: { approvalId: string; decision: 'approve' | 'deny' };
}

export const BUTTON_VALUE = /^(approve|deny) (apr-[a-z0-9-]{4,64})$/;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** undefined: nothing to run (no user, an interaction we do not offer, a button we did not make). */
export function readSlackForm(body: string): SlackSaid | undefined {
  const f = new URLSearchParams(body);
  const payload = f.get('payload');
  if (payload === null) {
    const id = str(f.get('user_id'));
    if (!id) return undefined;
    const name = str(f.get('user_name'));
    const responseUrl = str(f.get('response_url'));
    return {
      user: { id, ...(name ? { name } : {}) },
      channel: f.get('channel_id') ?? '',
      text: f.get('text') ?? '',
      ...(responseUrl ? { responseUrl } : {}),
    };
  }
  let p: Record<string, unknown>;
  try {
    p = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (p === null || typeof p !== 'object' || p.type !== 'block_actions') return undefined;
  const user = p.user as { id?: unknown; username?: unknown; name?: unknown } | undefined;
  const id = str(user?.id);
  // One click, one action: Slack sends the element that was pressed.
  const action = Array.isArray(p.actions)
    ? (p.actions[0] as { type?: unknown; value?: unknown } | undefined)
    : undefined;
  const m = action?.type === 'button' && typeof action.value === 'string' ? BUTTON_VALUE.exec(action.value) : null;
  if (!id || !m) return undefined;
  const name = str(user?.username) ?? str(user?.name);
  const channel =
    str((p.channel as { id?: unknown } | undefined)?.id) ??
    str((p.container as { channel_id?: unknown } | undefined)?.channel_id) ??
    '';
  const responseUrl = str(p.response_url);
  return {
    user: { id, ...(name ? { name } : {}) },
    channel,
    text: m[0],
    ...(responseUrl ? { responseUrl } : {}),
    button: { approvalId: m[2]!, decision: m[1] as 'approve' | 'deny' },
  };
}
