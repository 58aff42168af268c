/**
 * The client-node API operations the adapters call, per API group. The adapters take these narrowed
 * types (not the whole generated class), so `tsc` fails when one calls an operation that is not
 * listed here; `npm run build` keeps only these operations of client-node's generated API classes
 * (scripts/kube-api-slim.js: those classes are ~0.7 MB of the ~1 MB client-node adds to a bundle).
 * Add an operation here when an adapter needs it, and its RBAC verb in rbac.ts.
 */
import type { CoordinationV1Api, CoreV1Api, CustomObjectsApi, EventsV1Api } from '@kubernetes/client-node';

export const KUBE_API_METHODS = {
  CoreV1Api: [
    'readNode',
    'listNode',
    'patchNode',
    'patchNodeStatus',
    'listNamespacedPod',
    'listPodForAllNamespaces',
    'createNamespacedPodEviction',
    'readNamespacedConfigMap',
    'createNamespacedConfigMap',
    'replaceNamespacedConfigMap',
    'readNamespacedResourceQuota',
    'listNamespacedResourceQuota',
    'listResourceQuotaForAllNamespaces',
    'createNamespacedResourceQuota',
    'replaceNamespacedResourceQuota',
    'deleteNamespacedResourceQuota',
    'readNamespacedLimitRange',
    'listNamespacedLimitRange',
    'listLimitRangeForAllNamespaces',
    'createNamespacedLimitRange',
    'replaceNamespacedLimitRange',
  ],
  CoordinationV1Api: [
    'readNamespacedLease',
    'createNamespacedLease',
    'replaceNamespacedLease',
    'deleteNamespacedLease',
  ],
  EventsV1Api: ['createNamespacedEvent'],
  CustomObjectsApi: ['listClusterCustomObject', 'createClusterCustomObject', 'deleteClusterCustomObject'],
} as const;

type Ops<K extends keyof typeof KUBE_API_METHODS> = (typeof KUBE_API_METHODS)[K][number];
export type CoreApi = Pick<CoreV1Api, Ops<'CoreV1Api'>>;
export type CoordinationApi = Pick<CoordinationV1Api, Ops<'CoordinationV1Api'>>;
export type EventsApi = Pick<EventsV1Api, Ops<'EventsV1Api'>>;
export type CustomApi = Pick<CustomObjectsApi, Ops<'CustomObjectsApi'>>;
