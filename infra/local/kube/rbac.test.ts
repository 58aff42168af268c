import { describe, expect, it } from 'vitest';
import { authorize, type Attributes, type UserInfo } from './rbac.ts';
import { Store } from './store.ts';
import type { KubeObject } from './types.ts';

const R = 'rbac.authorization.k8s.io';
const obj = (kind: string, name: string, namespace: string | undefined, rest: object): KubeObject =>
  ({ apiVersion: `${R}/v1`, kind, metadata: { name, ...(namespace ? { namespace } : {}) }, ...rest }) as KubeObject;

function store(): Store {
  const s = new Store();
  s.put(
    `clusterroles.${R}`,
    obj('ClusterRole', 'nodes-patch', undefined, {
      rules: [
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
        { apiGroups: [''], resources: ['*/status'], verbs: ['patch'] },
        { apiGroups: [''], resources: ['configmaps'], resourceNames: ['only-this'], verbs: ['update'] },
        { nonResourceURLs: ['/metrics', '/debug/*'], verbs: ['get'] },
      ],
    }),
  );
  s.put(
    `clusterrolebindings.${R}`,
    obj('ClusterRoleBinding', 'nodes-patch', undefined, {
      subjects: [{ kind: 'Group', name: 'team:ops', apiGroup: R }],
      roleRef: { kind: 'ClusterRole', name: 'nodes-patch', apiGroup: R },
    }),
  );
  s.put(
    `roles.${R}`,
    obj('Role', 'leases', 'app', {
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['*'] }],
    }),
  );
  s.put(
    `rolebindings.${R}`,
    obj('RoleBinding', 'leases', 'app', {
      subjects: [{ kind: 'ServiceAccount', name: 'runner', namespace: 'app' }],
      roleRef: { kind: 'Role', name: 'leases', apiGroup: R },
    }),
  );
  // A ClusterRole bound by a RoleBinding grants its rules in that namespace only.
  s.put(
    `rolebindings.${R}`,
    obj('RoleBinding', 'nodes-in-app', 'app', {
      subjects: [{ kind: 'User', name: 'alice' }],
      roleRef: { kind: 'ClusterRole', name: 'nodes-patch', apiGroup: R },
    }),
  );
  return s;
}

const ops: UserInfo = { name: 'bob', groups: ['team:ops', 'system:authenticated'] };
const runner: UserInfo = { name: 'system:serviceaccount:app:runner', groups: ['system:authenticated'] };
const alice: UserInfo = { name: 'alice', groups: ['system:authenticated'] };
const res = (verb: string, resource: string, more: Partial<Extract<Attributes, { resource: string }>> = {}) => ({
  verb,
  group: '',
  resource,
  ...more,
});

describe('RBAC as kube-apiserver evaluates it', () => {
  it.each<[string, UserInfo, Attributes, boolean]>([
    ['a group bound cluster-wide may patch nodes', ops, res('patch', 'nodes'), true],
    ['… but not delete them (verbs match exactly)', ops, res('delete', 'nodes'), false],
    [
      '… a subresource needs its own entry: nodes/status through */status',
      ops,
      res('patch', 'nodes', { subresource: 'status' }),
      true,
    ],
    ['… nodes does not grant nodes/proxy', ops, res('get', 'nodes', { subresource: 'proxy' }), false],
    [
      '… resourceNames limit to the names listed',
      ops,
      res('update', 'configmaps', { name: 'only-this', namespace: 'x' }),
      true,
    ],
    ['… another name is refused', ops, res('update', 'configmaps', { name: 'other', namespace: 'x' }), false],
    [
      '… a list carries no name, so resourceNames refuse it',
      ops,
      res('update', 'configmaps', { namespace: 'x' }),
      false,
    ],
    ['… a nonResourceURL by prefix', ops, { verb: 'get', path: '/debug/pprof' }, true],
    ['… and exactly', ops, { verb: 'get', path: '/metricsz' }, false],
    [
      'a ServiceAccount subject is system:serviceaccount:<ns>:<name>',
      runner,
      { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases', namespace: 'app' },
      true,
    ],
    [
      '… a Role grants in its own namespace only',
      runner,
      { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases', namespace: 'other' },
      false,
    ],
    [
      'a RoleBinding to a ClusterRole grants in its namespace',
      alice,
      res('patch', 'nodes', { namespace: 'app' }),
      true,
    ],
    ['… never cluster-wide', alice, res('patch', 'nodes'), false],
    ['… nor in another namespace', alice, res('patch', 'nodes', { namespace: 'other' }), false],
    [
      'every authenticated user may ask /version and the self-review (bootstrap roles)',
      alice,
      { verb: 'get', path: '/version' },
      true,
    ],
    [
      '… and create a SelfSubjectAccessReview',
      alice,
      { verb: 'create', group: 'authorization.k8s.io', resource: 'selfsubjectaccessreviews' },
      true,
    ],
    ['system:masters may do anything', { name: 'root', groups: ['system:masters'] }, res('delete', 'nodes'), true],
  ])('%s', (_what, user, attrs, allowed) => {
    expect(authorize(store(), user, attrs).allowed).toBe(allowed);
  });

  it('says which binding allowed it, as the real authorizer does', () => {
    expect(authorize(store(), ops, res('patch', 'nodes')).reason).toBe(
      'RBAC: allowed by ClusterRoleBinding "nodes-patch" of ClusterRole "nodes-patch" to Group "team:ops"',
    );
    expect(
      authorize(store(), runner, { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: 'app' })
        .reason,
    ).toBe('RBAC: allowed by RoleBinding "leases/app" of Role "leases" to ServiceAccount "runner/app"');
  });
});
