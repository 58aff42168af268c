/**
 * `gpu-reflex chat verify`: checks a captured chat request the way the webhook does — the raw body,
 * the platform's headers given as flags, the replay window at `--now` — and says exactly why it
 * would be refused. `--decrypt` prints a Feishu/Lark callback's decrypted body.
 */
import { parseFlags } from '../../events/cli-kit/flags.ts';
import { InputError, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import {
  CHAT_PLATFORMS,
  feishuDecrypt,
  verifyChatRequest,
  type ChatPlatform,
  type ChatSecrets,
} from './core/signature.ts';

const HELP = `Usage: gpu-reflex chat verify --platform slack|dingtalk|feishu --body-file F [--secret S]
         [--timestamp T] [--signature SIG] [--nonce N] [--token T] [--encrypt-key K] [--now EPOCH] [--decrypt]

Checks one captured request as the chat webhook would: exit 0 and "accepted" when it would be
taken, exit 1 and the exact reason when not (stale, bad signature, wrong prefix, missing header).

  --platform P        slack, dingtalk or feishu
  --body-file F       the raw request body, byte for byte (- for standard input)
  --secret S          Slack's signing secret, or DingTalk's app secret
  --timestamp T       Slack X-Slack-Request-Timestamp (s), DingTalk timestamp (ms),
                      Feishu X-Lark-Request-Timestamp (s)
  --signature SIG     Slack X-Slack-Signature, DingTalk sign, Feishu X-Lark-Signature
  --nonce N           Feishu X-Lark-Request-Nonce
  --token T           Feishu verification token
  --encrypt-key K     Feishu Encrypt Key
  --now EPOCH         the time to judge the replay window at, in seconds (default: now)
  --decrypt           Feishu: print the decrypted body (also when it would be refused)

Example:
  gpu-reflex chat verify --platform slack --secret "$SLACK_SIGNING_SECRET" \\
    --timestamp 1531420618 --signature v0=a2114d57... --body-file body.txt --now 1531420620`;

export const chatVerifyCommand: Command = {
  path: ['chat', 'verify'],
  summary:
    'check a captured Slack, DingTalk or Feishu request the way the webhook does, and say why it would be refused',
  help: HELP,
  async run(args: string[], io: CliIo): Promise<number> {
    const values = parseFlags(args, {
      platform: { type: 'string' },
      'body-file': { type: 'string' },
      secret: { type: 'string' },
      timestamp: { type: 'string' },
      signature: { type: 'string' },
      nonce: { type: 'string' },
      token: { type: 'string' },
      'encrypt-key': { type: 'string' },
      now: { type: 'string' },
      decrypt: { type: 'boolean' },
    });
    const platform = values.platform as ChatPlatform | undefined;
    if (!platform || !CHAT_PLATFORMS.includes(platform))
      throw new UsageError(
        `--platform must be one of ${CHAT_PLATFORMS.join(', ')} ` +
          `(got ${values.platform === undefined ? 'nothing' : JSON.stringify(values.platform)})`,
      );
    if (!values['body-file']) throw new UsageError('--body-file FILE is required: the raw body, byte for byte');
    const nowS = values.now === undefined ? Math.floor(Date.now() / 1000) : Number(values.now);
    if (!Number.isFinite(nowS)) throw new UsageError(`--now must be seconds since the epoch (got "${values.now}")`);
    const body = await readInputText(values['body-file'], '--body-file', io);
    const headers: Record<string, string | undefined> =
      platform === 'slack'
        ? { 'x-slack-request-timestamp': values.timestamp, 'x-slack-signature': values.signature }
        : platform === 'dingtalk'
          ? { timestamp: values.timestamp, sign: values.signature }
          : {
              'x-lark-request-timestamp': values.timestamp,
              'x-lark-request-nonce': values.nonce,
              'x-lark-signature': values.signature,
            };
    const secrets: ChatSecrets = {
      ...(values.secret
        ? platform === 'slack'
          ? { slackSigningSecret: values.secret }
          : { dingtalkAppSecret: values.secret }
        : {}),
      ...(values.token ? { feishuVerificationToken: values.token } : {}),
      ...(values['encrypt-key'] ? { feishuEncryptKey: values['encrypt-key'] } : {}),
    };
    if (values.decrypt) {
      if (platform !== 'feishu' || !values['encrypt-key'])
        throw new UsageError('--decrypt needs --platform feishu and --encrypt-key');
      let encrypted: unknown;
      try {
        encrypted = (JSON.parse(body) as { encrypt?: unknown }).encrypt;
      } catch {
        throw new InputError(`--body-file ${values['body-file']}: not JSON`);
      }
      if (typeof encrypted !== 'string')
        throw new InputError(`--body-file ${values['body-file']}: no "encrypt" field to decrypt`);
      try {
        io.out(feishuDecrypt(encrypted, values['encrypt-key']));
      } catch (err) {
        throw new InputError(`cannot decrypt with that Encrypt Key: ${(err as Error).message}`);
      }
    }
    const v = verifyChatRequest(platform, { headers, body }, secrets, nowS * 1000);
    if (v.ok) {
      io.out(`accepted: a valid ${platform} request`);
      return 0;
    }
    io.out(`refused: ${v.reason}`);
    return 1;
  },
};
