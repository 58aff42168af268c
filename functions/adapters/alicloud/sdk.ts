import * as credentials from '@alicloud/credentials';

/** A CJS module's class whichever way it was imported (node's ESM interop or a bundler). */
export function defaultClass<T>(mod: unknown): T {
  const m = mod as { default: T | { default: T } };
  return (typeof m.default === 'function' ? m.default : (m.default as { default: T }).default) as T;
}

/** Alibaba's default credential chain: env access keys, RRSA (the OIDC variables ACK injects), the ECS RAM role… */
export function defaultCredential(): unknown {
  const Credential = defaultClass<new () => unknown>(credentials);
  return new Credential();
}

/**
 * The credential fields of an Alibaba client's Config: the access keys given (with an STS token when
 * there is one), else `credential`, else the default chain.
 */
export function credentialFields(
  keys: { accessKeyId?: string | undefined; accessKeySecret?: string | undefined; securityToken?: string | undefined },
  credential?: unknown,
): Record<string, unknown> {
  return keys.accessKeyId
    ? {
        accessKeyId: keys.accessKeyId,
        accessKeySecret: keys.accessKeySecret,
        ...(keys.securityToken ? { securityToken: keys.securityToken } : {}),
      }
    : { credential: credential ?? defaultCredential() };
}
