/**
 * The JSON types of the fields the served kinds declare, as the Go structs the real API server
 * decodes into. Only what clients write and read back is listed; unknown fields ride along (the
 * real server would prune them). A value of the wrong JSON type is what the real decoder refuses
 * (`json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool`)
 * and what, stored here, would later break kubectl and typed clients.
 */
export type FieldType =
  | 'string'
  | 'bool'
  | 'int'
  | 'intOrString'
  /** A resource quantity: string or number (normalize.ts checks the syntax). */
  | 'quantity'
  /** metav1.Time / MicroTime: an RFC 3339 string (a bad one breaks every Go client that reads it back). */
  | 'time'
  | 'any'
  | { map: FieldType }
  | { list: FieldType }
  | Struct;

export interface Struct {
  /** Go type name, for messages (`NodeSpec`). */
  go: string;
  fields: Record<string, FieldType>;
}

const struct = (go: string, fields: Record<string, FieldType>): Struct => ({ go, fields });
const strings = { list: 'string' } as const;
const stringMap = { map: 'string' } as const;
const quantities = { map: 'quantity' } as const;

const OwnerReference = struct('OwnerReference', {
  apiVersion: 'string',
  kind: 'string',
  name: 'string',
  uid: 'string',
  controller: 'bool',
  blockOwnerDeletion: 'bool',
});

export const ObjectMeta = struct('ObjectMeta', {
  name: 'string',
  generateName: 'string',
  namespace: 'string',
  uid: 'string',
  resourceVersion: 'string',
  generation: 'int',
  creationTimestamp: 'time',
  deletionTimestamp: 'time',
  deletionGracePeriodSeconds: 'int',
  labels: stringMap,
  annotations: stringMap,
  ownerReferences: { list: OwnerReference },
  finalizers: strings,
});

const Taint = struct('Taint', { key: 'string', value: 'string', effect: 'string', timeAdded: 'time' });
const Toleration = struct('Toleration', {
  key: 'string',
  operator: 'string',
  value: 'string',
  effect: 'string',
  tolerationSeconds: 'int',
});
const Requirement = struct('LabelSelectorRequirement', { key: 'string', operator: 'string', values: strings });
const LabelSelector = struct('LabelSelector', { matchLabels: stringMap, matchExpressions: { list: Requirement } });
const NodeSelectorTerm = struct('NodeSelectorTerm', {
  matchExpressions: { list: Requirement },
  matchFields: { list: Requirement },
});
const Affinity = struct('Affinity', {
  nodeAffinity: struct('NodeAffinity', {
    requiredDuringSchedulingIgnoredDuringExecution: struct('NodeSelector', {
      nodeSelectorTerms: { list: NodeSelectorTerm },
    }),
  }),
});

const Container = struct('Container', {
  name: 'string',
  image: 'string',
  imagePullPolicy: 'string',
  command: strings,
  args: strings,
  workingDir: 'string',
  env: { list: struct('EnvVar', { name: 'string', value: 'string' }) },
  ports: {
    list: struct('ContainerPort', { name: 'string', containerPort: 'int', protocol: 'string', hostPort: 'int' }),
  },
  resources: struct('ResourceRequirements', { requests: quantities, limits: quantities }),
  volumeMounts: { list: struct('VolumeMount', { name: 'string', mountPath: 'string', readOnly: 'bool' }) },
});

export const PodSpec = struct('PodSpec', {
  containers: { list: Container },
  initContainers: { list: Container },
  nodeName: 'string',
  nodeSelector: stringMap,
  tolerations: { list: Toleration },
  affinity: Affinity,
  terminationGracePeriodSeconds: 'int',
  activeDeadlineSeconds: 'int',
  restartPolicy: 'string',
  dnsPolicy: 'string',
  schedulerName: 'string',
  serviceAccountName: 'string',
  priority: 'int',
  priorityClassName: 'string',
  hostNetwork: 'bool',
  hostPID: 'bool',
  volumes: { list: struct('Volume', { name: 'string' }) },
});

const Condition = (go: string) =>
  struct(go, {
    type: 'string',
    status: 'string',
    reason: 'string',
    message: 'string',
    lastTransitionTime: 'time',
    lastHeartbeatTime: 'time',
    lastProbeTime: 'time',
  });

const Node = struct('Node', {
  spec: struct('NodeSpec', {
    unschedulable: 'bool',
    taints: { list: Taint },
    podCIDR: 'string',
    podCIDRs: strings,
    providerID: 'string',
  }),
  status: struct('NodeStatus', {
    capacity: quantities,
    allocatable: quantities,
    conditions: { list: Condition('NodeCondition') },
    addresses: { list: struct('NodeAddress', { type: 'string', address: 'string' }) },
    nodeInfo: struct(
      'NodeSystemInfo',
      Object.fromEntries(
        [
          'machineID',
          'systemUUID',
          'bootID',
          'kernelVersion',
          'osImage',
          'containerRuntimeVersion',
          'kubeletVersion',
          'kubeProxyVersion',
          'operatingSystem',
          'architecture',
        ].map((k) => [k, 'string']),
      ),
    ),
  }),
});

const Pod = struct('Pod', {
  spec: PodSpec,
  status: struct('PodStatus', {
    phase: 'string',
    conditions: { list: Condition('PodCondition') },
    hostIP: 'string',
    podIP: 'string',
    startTime: 'time',
    qosClass: 'string',
    reason: 'string',
    message: 'string',
  }),
});

const ObjectReference = struct('ObjectReference', {
  kind: 'string',
  namespace: 'string',
  name: 'string',
  uid: 'string',
  apiVersion: 'string',
  resourceVersion: 'string',
  fieldPath: 'string',
});

const Event = struct('Event', {
  involvedObject: ObjectReference,
  reason: 'string',
  message: 'string',
  type: 'string',
  count: 'int',
  firstTimestamp: 'time',
  lastTimestamp: 'time',
  eventTime: 'time',
  source: struct('EventSource', { component: 'string', host: 'string' }),
  action: 'string',
  reportingComponent: 'string',
  reportingInstance: 'string',
  related: ObjectReference,
  series: struct('EventSeries', { count: 'int', lastObservedTime: 'time' }),
});

const LimitRangeItem = struct('LimitRangeItem', {
  type: 'string',
  default: quantities,
  defaultRequest: quantities,
  max: quantities,
  min: quantities,
  maxLimitRequestRatio: quantities,
});

/** Per kind, the fields beside metadata. */
export const KINDS: Record<string, Struct> = {
  Node,
  Pod,
  Namespace: struct('Namespace', { spec: struct('NamespaceSpec', { finalizers: strings }) }),
  ConfigMap: struct('ConfigMap', { data: stringMap, binaryData: stringMap, immutable: 'bool' }),
  Event,
  ResourceQuota: struct('ResourceQuota', { spec: struct('ResourceQuotaSpec', { hard: quantities, scopes: strings }) }),
  LimitRange: struct('LimitRange', { spec: struct('LimitRangeSpec', { limits: { list: LimitRangeItem } }) }),
  PodDisruptionBudget: struct('PodDisruptionBudget', {
    spec: struct('PodDisruptionBudgetSpec', {
      minAvailable: 'intOrString',
      maxUnavailable: 'intOrString',
      selector: LabelSelector,
      unhealthyPodEvictionPolicy: 'string',
    }),
  }),
  Lease: struct('Lease', {
    spec: struct('LeaseSpec', {
      holderIdentity: 'string',
      leaseDurationSeconds: 'int',
      acquireTime: 'time',
      renewTime: 'time',
      leaseTransitions: 'int',
    }),
  }),
  DaemonSet: struct('DaemonSet', {
    spec: struct('DaemonSetSpec', {
      selector: LabelSelector,
      template: struct('PodTemplateSpec', { metadata: ObjectMeta, spec: PodSpec }),
      minReadySeconds: 'int',
      revisionHistoryLimit: 'int',
    }),
  }),
};
