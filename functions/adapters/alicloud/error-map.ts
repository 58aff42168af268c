import {
  AdapterError,
  BadInputError,
  ConfigurationError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ThrottledError,
  TransientError,
} from '../errors.ts';

/** An error from Alibaba Cloud, with its code and the RAM action of the call (for permission errors). */
export interface AliCloudErrorFields {
  code: string;
  action: string;
  requestId?: string;
}

interface SdkError {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  data?: { Message?: unknown; message?: unknown; RequestId?: unknown; requestId?: unknown; statusCode?: unknown };
}

const isThrottle = (code: string) =>
  code.startsWith('Throttling') || code === 'ServiceUnavailable' || code === 'Throttled';
const NETWORK = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ReadTimeout',
  'ConnectTimeout',
]);

/** Maps an SDK error to the adapter hierarchy; the message carries Alibaba's code and text. */
export function mapAliCloudError(err: unknown, action: string): AdapterError {
  if (err instanceof AdapterError) return err;
  const e = (err ?? {}) as SdkError;
  const code = typeof e.code === 'string' ? e.code : '';
  const status =
    typeof e.data?.statusCode === 'number'
      ? e.data.statusCode
      : typeof e.statusCode === 'number'
        ? e.statusCode
        : undefined;
  const text = String(e.data?.Message ?? e.data?.message ?? e.message ?? err);
  const requestId = String(e.data?.RequestId ?? e.data?.requestId ?? '');
  const message = `${action}: ${code || 'error'}: ${text}${requestId ? ` (request ${requestId})` : ''}`;
  const fields = { what: action, cause: err, ...(status !== undefined ? { status } : {}) };
  if (status === undefined && (NETWORK.has(code) || /socket hang up|ECONNRESET|ECONNREFUSED|timeout/i.test(text)))
    return new TransientError(message, fields);
  if (isThrottle(code) || status === 429) return new ThrottledError(message, fields);
  if (status !== undefined && status >= 500) return new TransientError(message, fields);
  // 409, or a code naming a conflict (another operation holds the node pool): retried after a
  // backoff like throttling. Alibaba publishes no list of ACK node-pool codes (its API error
  // center), so the status and the code's words decide. A retried ModifyClusterNodePool is safe:
  // desired_size is absolute, so a scale-out sent twice buys once.
  if (status === 409 || /Conflict/i.test(code)) return new ConflictError(message, fields);
  if (
    code.startsWith('InvalidAccessKeyId') ||
    code === 'SignatureDoesNotMatch' ||
    code === 'MissingAccessKeyId' ||
    code === 'InvalidSecurityToken.Expired' ||
    code.startsWith('InvalidSecurityToken')
  ) {
    return new ConfigurationError(`${message} — check the AccessKey or role gpu-reflex runs with`, fields);
  }
  if (
    code === 'Forbidden.RAM' ||
    code.startsWith('Forbidden') ||
    code === 'NoPermission' ||
    code === 'IncorrectInstanceStatus' ||
    status === 403
  )
    return new ForbiddenError(
      code.startsWith('Forbidden') || code === 'NoPermission'
        ? `${message} — the RAM policy must allow ${action}`
        : message,
      fields,
    );
  if (status === 404 || code.endsWith('NotFound')) return new NotFoundError(message, fields);
  return new BadInputError(message, fields);
}
