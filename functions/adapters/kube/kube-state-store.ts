/**
 * StateStore in one ConfigMap (default `gpu-reflex-state`): each key's value is JSON in
 * `data[key]`. Writes are replace-with-resourceVersion (or create for the first write), so two
 * functions updating at once cannot lose each other's changes: the loser gets 409 and re-applies
 * its pure update to the winner's data.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { CoreApi } from './api-methods.ts';
import { BadInputError, NotFoundError, fromKubeError } from '../errors.ts';
import type { Json } from './model.ts';
import type { StateStore } from './ports.ts';
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from './retry.ts';
import { sameJson } from './same-json.ts';

export const STATE_CONFIGMAP = 'gpu-reflex-state';

/** ConfigMap data keys allow [-._a-zA-Z0-9]; the store refuses others rather than mangling them. */
const KEY = /^[-._a-zA-Z0-9]{1,253}$/;

export function decodeValue(key: string, raw: string): Json {
  try {
    return JSON.parse(raw) as Json;
  } catch (err) {
    throw new BadInputError(`state key ${key} holds invalid JSON`, { what: `state key ${key}`, cause: err });
  }
}

export interface KubeStateStoreOptions {
  namespace: string;
  name?: string;
  conflictAttempts?: number;
}

export class KubeStateStore implements StateStore {
  readonly namespace: string;
  readonly name: string;
  private readonly attempts: number;

  constructor(
    private readonly core: CoreApi,
    options: KubeStateStoreOptions,
  ) {
    this.namespace = options.namespace;
    this.name = options.name ?? STATE_CONFIGMAP;
    this.attempts = options.conflictAttempts ?? DEFAULT_CONFLICT_ATTEMPTS;
  }

  /** The ConfigMap `<name>-<shard>` in the same namespace. */
  // RBAC: configmaps get, create, update
  shard(name: string): StateStore {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name))
      throw new BadInputError(`state shard ${JSON.stringify(name)} must be a DNS label`, { what: 'state shard' });
    return new KubeStateStore(this.core, {
      namespace: this.namespace,
      name: `${this.name}-${name}`,
      conflictAttempts: this.attempts,
    });
  }

  // RBAC: configmaps get
  async get(key: string): Promise<Json | undefined> {
    const raw = (await this.read())?.data?.[key];
    return raw === undefined ? undefined : decodeValue(key, raw);
  }

  // RBAC: configmaps get
  async getAll(): Promise<Record<string, Json>> {
    const data = (await this.read())?.data ?? {};
    return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, decodeValue(k, v)]));
  }

  // RBAC: configmaps get, create, update
  async update<T extends Json>(key: string, fn: (current: Json | undefined) => T | undefined): Promise<T | undefined> {
    if (!KEY.test(key))
      throw new BadInputError(`state key ${JSON.stringify(key)} must match ${KEY}`, { what: 'state key' });
    const what = `updating configmap ${this.namespace}/${this.name} key ${key}`;
    return retryOnConflict(what, this.attempts, async () => {
      const cm = await this.read();
      const raw = cm?.data?.[key];
      const current = raw === undefined ? undefined : decodeValue(key, raw);
      const next = fn(current);
      if (next === undefined ? current === undefined : current !== undefined && sameJson(current, next)) return next;
      const data = { ...(cm?.data ?? {}) };
      if (next === undefined) delete data[key];
      else data[key] = JSON.stringify(next);
      if (cm === undefined) {
        // Two first writers race on create: the loser gets 409 AlreadyExists and retries as a replace.
        await this.core.createNamespacedConfigMap({
          namespace: this.namespace,
          body: {
            metadata: {
              name: this.name,
              namespace: this.namespace,
              labels: { 'app.kubernetes.io/managed-by': 'gpu-reflex' },
            },
            data,
          },
        });
      } else {
        const body: V1ConfigMap = { ...cm, data };
        await this.core.replaceNamespacedConfigMap({ namespace: this.namespace, name: this.name, body });
      }
      return next;
    });
  }

  private async read(): Promise<V1ConfigMap | undefined> {
    try {
      return await this.core.readNamespacedConfigMap({ namespace: this.namespace, name: this.name });
    } catch (err) {
      const mapped = fromKubeError(err, `reading configmap ${this.namespace}/${this.name}`);
      if (mapped instanceof NotFoundError) return undefined;
      throw mapped;
    }
  }
}
