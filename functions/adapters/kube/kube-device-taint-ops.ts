/**
 * DeviceTaintOps over resource.k8s.io: the GPUs a node's DRA driver publishes in its
 * ResourceSlices, and the cluster-scoped DeviceTaintRules gpu-reflex keeps on them. Through the
 * generic custom-objects client, so one code path serves each version a cluster offers
 * (DeviceTaintRule: v1alpha3 in Kubernetes 1.33–1.35, v1beta2 in 1.36, v1 from 1.37; ResourceSlice
 * v1 from 1.34), chosen by the remediation policy's `fence.dra`.
 *
 * Our rules carry the label `gpu-reflex.io/node=<node>`, so a node's rules are listed alone and a
 * rule someone else made is never deleted.
 */
import type { CustomApi } from './api-methods.ts';
import { ConflictError, NotFoundError, fromKubeError } from '../errors.ts';
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

export class KubeDeviceTaintOps implements DeviceTaintOps {
  constructor(
    private readonly custom: CustomApi,
    private readonly versions: DraVersions = { deviceTaintRuleVersion: 'v1', resourceSliceVersion: 'v1' },
    private readonly pageSize = 500,
  ) {}

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
    const slices = await this.list<Slice>(
      this.versions.resourceSliceVersion,
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
    const rules = await this.list<Named>(
      this.versions.deviceTaintRuleVersion,
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
    const body = {
      apiVersion: `${GROUP}/${this.versions.deviceTaintRuleVersion}`,
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
        version: this.versions.deviceTaintRuleVersion,
        plural: 'devicetaintrules',
        body,
      });
      return true;
    } catch (err) {
      const mapped = fromKubeError(err, `creating devicetaintrule ${rule.name}`);
      // Already there (a redelivery, or a create whose answer was lost): same name, same rule.
      if (mapped instanceof ConflictError) return false;
      throw mapped;
    }
  }

  // RBAC: resource.k8s.io devicetaintrules delete
  async remove(name: string): Promise<boolean> {
    try {
      await this.custom.deleteClusterCustomObject({
        group: GROUP,
        version: this.versions.deviceTaintRuleVersion,
        plural: 'devicetaintrules',
        name,
      });
      return true;
    } catch (err) {
      const mapped = fromKubeError(err, `deleting devicetaintrule ${name}`);
      if (mapped instanceof NotFoundError) return false;
      throw mapped;
    }
  }
}
