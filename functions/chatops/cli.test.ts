import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../bin/main.ts';

const dir = mkdtempSync(join(tmpdir(), 'chat-verify-'));
const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
const SLACK_BODY = file(
  'slack.txt',
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
);
const slack = [
  'chat',
  'verify',
  '--platform',
  'slack',
  '--secret',
  '8f742231b10e8888abcd99yyyzzz85a5',
  '--timestamp',
  '1531420618',
  '--signature',
  'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
  '--body-file',
  SLACK_BODY,
];

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { out: (l: string) => void out.push(...l.split('\n')), err: (l: string) => void err.push(l) },
    out,
    err,
  };
}

describe('gpu-reflex chat verify', () => {
  it('accepts Slack’s example at its time, and says exactly why it refuses the same request later or changed', async () => {
    const ok = capture();
    expect(await main([...slack, '--now', '1531420620'], ok.io, {})).toBe(0);
    expect(ok.out).toEqual(['accepted: a valid slack request']);
    const stale = capture();
    expect(await main([...slack, '--now', '1531421000'], stale.io, {})).toBe(1);
    expect(stale.out).toEqual([
      'refused: stale: X-Slack-Request-Timestamp 1531420618 is 382 s from now (window 300 s)',
    ]);
    const forged = capture();
    expect(
      await main([...slack.slice(0, -1), file('forged.txt', 'token=x'), '--now', '1531420620'], forged.io, {}),
    ).toBe(1);
    expect(forged.out[0]).toMatch(/^refused: bad signature/);
  });

  it('decrypts Feishu’s example with --decrypt', async () => {
    const body = file('feishu.json', JSON.stringify({ encrypt: 'P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=' }));
    const c = capture();
    expect(
      await main(
        [
          'chat',
          'verify',
          '--platform',
          'feishu',
          '--encrypt-key',
          'test key',
          '--token',
          't',
          '--body-file',
          body,
          '--decrypt',
        ],
        c.io,
        {},
      ),
    ).toBe(1);
    expect(c.out[0]).toBe('hello world');
    expect(c.out[1]).toBe('refused: the (decrypted) body is not JSON');
  });

  it.each([
    [['chat', 'verify', '--platform', 'teams', '--body-file', SLACK_BODY]],
    [['chat', 'verify', '--platform', 'slack']],
    [['chat', 'verify', '--platform', 'slack', '--body-file', SLACK_BODY, '--now', 'soon']],
  ])('refuses bad usage %j with exit 2', async (argv) => {
    const c = capture();
    expect(await main(argv, c.io, {})).toBe(2);
    expect(c.err).toHaveLength(1);
  });
});
