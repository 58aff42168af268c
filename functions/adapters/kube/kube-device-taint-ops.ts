/**
 * DeviceTaintOps over resource.k8s.io: the GPUs a node's DRA driver publishes in its
 * ResourceSlices, and the cluster-scoped DeviceTaintRules gpu-reflex keeps on them. Through the
 * generic custom-objects client, so one code path serves each version a cluster offers
 * (DeviceTaintRule: v1alpha3 in Kubernetes 1.33–1.35, v1beta2 in 1.36, v1 from 1.37; ResourceSlice
 * v1beta1 from 1.32, v1beta2 from 1.33, v1 from 1.34; the alpha and beta ones only where the cluster's
 * --runtime-config turns them on: kubernetes/kubernetes#137170, pkg/features/kube_features.go).
 *
 * The remediation policy's `fence.dra` names the version tried first. A cluster that does not serve it
 * (a list answered 404) is asked at the others, newest first, and the one that answers is kept: a
 * release's served versions are found by asking, not assumed (a default of v1 on a 1.36 cluster used to
 * turn every GPU fence into a whole-node taint).
 *
 * Our rules carry the label `gpu-reflex.io/node=<node>`, so a node's rules are listed alone and a
 * rule someone else made is never deleted.
 */
import type { CustomApi } from './api-methods.ts';
import { ConfigurationError, ConflictError, NotFoundError, fromKubeError } from '../errors.ts';
import type { DeviceRef, DeviceTaint } from './ports.ts';
import { listAll, type Page } from './list-all.ts';
import type { DeviceTaintOps } from './ports.ts';

export const GROUP = 'resource.k8s.io';
/** The label on every DeviceTaintRule gpu-reflex creates: the node whose GPU it holds out. */
export const RULE_NODE_LABEL = 'gpu-reflex.io/node';

export interface DraVersions {
  deviceTaintRuleVersion: string;
  resourceSliceVersion: string;
}

interface SliceDevice {
  name?: string;
  attributes?: Record<string, { string?: string }>;
  /** v1beta1 nests a device's attributes under `basic`. */
  basic?: { attributes?: Record<string, { string?: string }> };
}
interface Slice {
  spec?: { driver?: string; nodeName?: string; pool?: { name?: string }; devices?: SliceDevice[] };
}
interface Named {
  metadata?: { name?: string };
}

/** A device's GPU UUID: the driver's `uuid` attribute, bare or qualified with the driver's domain. */
export function uuidOf(d: SliceDevice, driver: string): string | undefined {
  const attrs = d.attributes ?? d.basic?.attributes ?? {};
  return attrs.uuid?.string ?? attrs[`${driver}/uuid`]?.string;
}

/** Each kind's versions, newest first: the order they are tried in after the policy's own. */
const VERSIONS = {
  devicetaintrules: ['v1', 'v1beta2', 'v1alpha3'],
  resourceslices: ['v1', 'v1beta2', 'v1beta1'],
} as const;
type Plural = keyof typeof VERSIONS;

/** Whether a 404's Status names an object (`details.name`): missing object, not missing API. */
function namesObject(err: unknown): boolean {
  let body = (err as { body?: unknown } | null)?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return false;
    }
  }
  const details = (body as { details?: { name?: unknown } } | null | undefined)?.details;
  return typeof details?.name === 'string' && details.name !== '';
}

export class KubeDeviceTaintOps implements DeviceTaintOps {
  /** The version of each kind the cluster answered at (found by the first list). */
  private readonly found = new Map<Plural, string>();

  constructor(
    private readonly custom: CustomApi,
    private readonly versions: DraVersions = { deviceTaintRuleVersion: 'v1', resourceSliceVersion: 'v1' },
    private readonly pageSize = 500,
  ) {}

  private preferred(plural: Plural): string {
    return (
      this.found.get(plural) ??
      (plural === 'devicetaintrules' ? this.versions.deviceTaintRuleVersion : this.versions.resourceSliceVersion)
    );
  }

  /**
   * Lists at the version found (or the policy's), then at the kind's other versions: a 404 on a list is
   * always "not served at this version" (a list has no object to be missing). None served: NotFoundError.
   */
  private async listServed<T>(
    plural: Plural,
    selector: { fieldSelector?: string; labelSelector?: string },
    what: string,
  ): Promise<T[]> {
    const first = this.preferred(plural);
    const order = [first, ...VERSIONS[plural].filter((v) => v !== first)];
    for (const version of order) {
      try {
        const items = await this.list<T>(version, plural, selector, what);
        this.found.set(plural, version);
        return items;
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
    this.found.delete(plural);
    throw new NotFoundError(`${what}: the cluster serves ${plural}.${GROUP} at none of ${order.join(', ')}`, {
      what,
      status: 404,
    });
  }

  /** Every object of a cluster-scoped resource.k8s.io kind matching `selector`, page by page. */
  private list<T>(
    version: string,
    plural: string,
    selector: { fieldSelector?: string; labelSelector?: string },
    what: string,
  ): Promise<T[]> {
    return listAll<T>(async (cont) => {
      try {
        return (await this.custom.listClusterCustomObject({
          group: GROUP,
          version,
          plural,
          ...selector,
          limit: this.pageSize,
          ...(cont ? { _continue: cont } : {}),
        })) as Page<T>;
      } catch (err) {
        throw fromKubeError(err, what);
      }
    });
  }

  // RBAC: resource.k8s.io resourceslices list
  async devices(node: string, driver: string): Promise<Record<string, DeviceRef>> {
    const slices = await this.listServed<Slice>(
      'resourceslices',
      { fieldSelector: `spec.nodeName=${node}` },
      `listing resourceslices of node ${node}`,
    );
    const out: Record<string, DeviceRef> = {};
    for (const s of slices) {
      if (s.spec?.driver !== driver || !s.spec.pool?.name) continue;
      for (const d of s.spec.devices ?? []) {
        const uuid = uuidOf(d, driver);
        if (uuid && d.name) out[uuid] = { driver, pool: s.spec.pool.name, device: d.name };
      }
    }
    return out;
  }

  // RBAC: resource.k8s.io devicetaintrules list
  async rules(node: string): Promise<string[]> {
    const rules = await this.listServed<Named>(
      'devicetaintrules',
      { labelSelector: `${RULE_NODE_LABEL}=${node}` },
      `listing devicetaintrules of node ${node}`,
    );
    return rules
      .map((r) => r.metadata?.name ?? '')
      .filter(Boolean)
      .sort();
  }

  // RBAC: resource.k8s.io devicetaintrules create
  async create(rule: DeviceTaint): Promise<boolean> {
    const version = this.preferred('devicetaintrules');
    const body = {
      apiVersion: `${GROUP}/${version}`,
      kind: 'DeviceTaintRule',
      metadata: {
        name: rule.name,
        labels: { [RULE_NODE_LABEL]: rule.node },
        annotations: { 'gpu-reflex.io/gpu': rule.gpuUuid },
      },
      spec: { deviceSelector: { driver: rule.driver, pool: rule.pool, device: rule.device }, taint: rule.taint },
    };
    try {
      await this.custom.createClusterCustomObject({
        group: GROUP,
        version,
        plural: 'devicetaintrules',
        body,
      });
      return true;
    } catch (err) {
      const mapped = fromKubeError(err, `creating devicetaintrule ${rule.name}`);
      // Already there (a redelivery, or a create whose answer was lost): same name, same rule.
      if (mapped instanceof ConflictError) return false;
      // A create has no object to be missing: 404 is the kind not served at this version. Never
      // NotFoundError, which the handler would read as "already done" and drop the fence with.
      if (mapped instanceof NotFoundError)
        throw new ConfigurationError(`${mapped.message} (devicetaintrules.${GROUP}/${version} is not served)`, {
          cause: err,
        });
      throw mapped;
    }
  }

  // RBAC: resource.k8s.io devicetaintrules delete
  async remove(name: string): Promise<boolean> {
    try {
      await this.custom.deleteClusterCustomObject({
        group: GROUP,
        version: this.preferred('devicetaintrules'),
        plural: 'devicetaintrules',
        name,
      });
      return true;
    } catch (err) {
      const mapped = fromKubeError(err, `deleting devicetaintrule ${name}`);
      // The rule is gone (its 404 names it), unless the 404 names nothing: the kind is not served here.
      if (mapped instanceof NotFoundError && namesObject(err)) return false;
      if (mapped instanceof NotFoundError)
        throw new ConfigurationError(`${mapped.message} (devicetaintrules.${GROUP} is not served there)`, {
          cause: err,
        });
      throw mapped;
    }
  }
}
