/**
 * LeaseOps over coordination.k8s.io/v1 Leases. A free lease is no object: acquiring creates it,
 * releasing deletes it (with the resourceVersion we wrote as a precondition). So the common case —
 * a node's first remediation, or its next one after the last was released — is one request each
 * way, and a fleet leaves no Lease behind per node it ever remediated. Of two contenders exactly
 * one create wins; the other gets 409 AlreadyExists, reads, sees the winner's unexpired holding
 * and answers `acquired: false`. A lease left held by a crashed holder is taken over once expired
 * by a replace carrying the resourceVersion that was read (again one winner).
 *
 * Times are written as V1MicroTime (microsecond RFC 3339, which the API server requires for
 * Lease times; a plain Date would serialize with milliseconds only).
 */
import { V1MicroTime } from '@kubernetes/client-node';
import type { V1Lease } from '@kubernetes/client-node';
import type { CoordinationApi } from './api-methods.ts';
import type { Clock } from '../clock.ts';
import {
  BadInputError,
  ConfigurationError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  fromKubeError,
} from '../errors.ts';
import type { LeaseAttempt, LeaseState } from './model.ts';
import type { LeaseOps } from './ports.ts';
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from './retry.ts';

/** The client hands MicroTime back as the wire string; Date fields as Date. Accept both. */
function ms(t: unknown): number | undefined {
  if (t instanceof Date) return t.getTime();
  if (typeof t === 'string') {
    const v = Date.parse(t);
    return Number.isNaN(v) ? undefined : v;
  }
  return undefined;
}

export function toLeaseState(l: V1Lease): LeaseState {
  const holder = l.spec?.holderIdentity === '' ? undefined : l.spec?.holderIdentity;
  const durationS = l.spec?.leaseDurationSeconds ?? 0;
  const renewed = ms(l.spec?.renewTime) ?? ms(l.spec?.acquireTime);
  const expiresAtMs = holder === undefined || renewed === undefined ? 0 : renewed + durationS * 1000;
  return { name: l.metadata?.name ?? '', holder, durationS, expiresAtMs };
}

export class KubeLeaseOps implements LeaseOps {
  private readonly attempts: number;

  constructor(
    private readonly coordination: CoordinationApi,
    private readonly namespace: string,
    options: { conflictAttempts?: number } = {},
  ) {
    this.attempts = options.conflictAttempts ?? DEFAULT_CONFLICT_ATTEMPTS;
  }

  /** The lease object as this process last wrote it, per name and holder (for a one-request release). */
  private readonly held = new Map<string, V1Lease>();

  // RBAC: coordination.k8s.io leases get, create, update
  async tryAcquire(name: string, holder: string, durationS: number, clock: Clock): Promise<LeaseAttempt> {
    if (holder === '') throw new BadInputError('lease holder must not be empty', { what: `lease ${name}` });
    if (!(Number.isInteger(durationS) && durationS > 0)) {
      throw new BadInputError(`lease durationS must be a positive integer, got ${durationS}`, {
        what: `lease ${name}`,
      });
    }
    return retryOnConflict(`acquiring lease ${this.namespace}/${name}`, this.attempts, async () => {
      const now = new V1MicroTime(clock.now());
      const created = await this.create(name, holder, durationS, now);
      if (created) {
        this.held.set(`${name}\u0000${holder}`, created);
        return { acquired: true, lease: toLeaseState(created) };
      }
      const current = await this.read(name);
      // Released between our create and our read: the next try creates it.
      if (current === undefined)
        throw new ConflictError(`lease ${this.namespace}/${name} went away while acquiring`, {
          what: `lease ${name}`,
          status: 409,
        });
      const state = toLeaseState(current);
      const ours = state.holder === holder;
      if (!ours && state.holder !== undefined && state.expiresAtMs > clock.now())
        return { acquired: false, lease: state };
      const spec = ours
        ? { ...current.spec, leaseDurationSeconds: durationS, renewTime: now }
        : {
            ...current.spec,
            holderIdentity: holder,
            leaseDurationSeconds: durationS,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: (current.spec?.leaseTransitions ?? 0) + 1,
          };
      const replaced = await this.replace(name, { ...current, spec });
      this.held.set(`${name}\u0000${holder}`, replaced);
      return { acquired: true, lease: toLeaseState(replaced) };
    });
  }

  /** Creates the lease held by `holder`; undefined when it already exists (409 AlreadyExists). */
  private async create(
    name: string,
    holder: string,
    durationS: number,
    now: V1MicroTime,
  ): Promise<V1Lease | undefined> {
    try {
      return await this.coordination.createNamespacedLease({
        namespace: this.namespace,
        body: {
          metadata: { name, namespace: this.namespace },
          spec: {
            holderIdentity: holder,
            leaseDurationSeconds: durationS,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        },
      });
    } catch (err) {
      const mapped = fromKubeError(err, `creating lease ${this.namespace}/${name}`);
      if (mapped instanceof ConflictError) return undefined;
      // A 404 on create is the namespace, not the lease: the cluster is not set up, which
      // must not read as "already done" (the event would be acknowledged and forgotten).
      if (mapped instanceof NotFoundError)
        throw new ConfigurationError(
          `namespace "${this.namespace}" does not exist: create it (infra/k8s) so gpu-reflex can hold its leases`,
          { what: `lease ${name}`, cause: err, status: 404 },
        );
      throw mapped;
    }
  }

  // RBAC: coordination.k8s.io leases get, update
  renew(name: string, holder: string, clock: Clock): Promise<boolean> {
    return retryOnConflict(`renewing lease ${this.namespace}/${name}`, this.attempts, async () => {
      const current = await this.read(name);
      if (current === undefined || toLeaseState(current).holder !== holder) return false;
      this.held.set(
        `${name}\u0000${holder}`,
        await this.replace(name, { ...current, spec: { ...current.spec, renewTime: new V1MicroTime(clock.now()) } }),
      );
      return true;
    });
  }

  // RBAC: coordination.k8s.io leases get, update, delete
  async release(name: string, holder: string): Promise<boolean> {
    // What this process wrote when it acquired: deleting that exact version is one request (no
    // read). Anything changed since (a renewal elsewhere, expiry and a new holder) fails the
    // precondition with 409, and the read-check-delete below decides.
    const key = `${name}\u0000${holder}`;
    const mine = this.held.get(key);
    this.held.delete(key);
    if (mine?.metadata?.resourceVersion) {
      try {
        await this.remove(name, mine);
        return true;
      } catch (err) {
        const mapped = fromKubeError(err, `releasing lease ${this.namespace}/${name}`);
        if (mapped instanceof NotFoundError) return false;
        if (!(mapped instanceof ConflictError)) throw mapped;
      }
    }
    return retryOnConflict(`releasing lease ${this.namespace}/${name}`, this.attempts, async () => {
      const current = await this.read(name);
      if (current === undefined || toLeaseState(current).holder !== holder) return false;
      try {
        await this.remove(name, current);
      } catch (err) {
        if (fromKubeError(err, `releasing lease ${this.namespace}/${name}`) instanceof NotFoundError) return false;
        throw err;
      }
      return true;
    });
  }

  // RBAC: coordination.k8s.io leases get
  async get(name: string): Promise<LeaseState | undefined> {
    const l = await this.read(name);
    return l && toLeaseState(l);
  }

  /**
   * Frees `lease` if it is still at the version read or written (else 409): deletes it. Where the
   * Role does not grant delete yet (infra/k8s applied after the functions were updated), frees it
   * as before, by a replace without holder, so a rolling upgrade never leaves leases held.
   */
  private async remove(name: string, lease: V1Lease): Promise<void> {
    try {
      await this.coordination.deleteNamespacedLease({
        namespace: this.namespace,
        name,
        body: { preconditions: { resourceVersion: lease.metadata?.resourceVersion } },
      });
    } catch (err) {
      if (!(fromKubeError(err, `releasing lease ${this.namespace}/${name}`) instanceof ForbiddenError)) throw err;
      const { holderIdentity: _gone, ...spec } = lease.spec ?? {};
      await this.replace(name, { ...lease, spec });
    }
  }

  private replace(name: string, body: V1Lease): Promise<V1Lease> {
    return this.coordination.replaceNamespacedLease({ namespace: this.namespace, name, body });
  }

  private async read(name: string): Promise<V1Lease | undefined> {
    try {
      return await this.coordination.readNamespacedLease({ namespace: this.namespace, name });
    } catch (err) {
      const mapped = fromKubeError(err, `reading lease ${this.namespace}/${name}`);
      if (mapped instanceof NotFoundError) return undefined;
      throw mapped;
    }
  }
}
