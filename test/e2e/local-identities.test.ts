import { describe, expect, it } from 'vitest';
import { AGENT_USER, FUNCTIONS_USER } from '../../infra/local/kube/shipped-rbac.ts';
import { CGPU_REQUESTS, coveredBy, STACK_REQUESTS } from '../contract/stack-requests.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * The embedded stack's functions and agents act as their ServiceAccounts under infra/k8s's RBAC
 * (infra/local/kube/shipped-rbac.ts): the simulated server's audit records say who made each write.
 * The default scenario drains a node, relays a MIG node (whose mig-parted ConfigMap the functions
 * create: the rule this run found missing from functions-rbac.yaml) and scales a pool.
 */
describe("the stack's identities", () => {
  it("every node write by gpu-reflex is the functions' ServiceAccount or the agent's, none is the admin's", async () => {
    const lines: string[] = [];
    const { sim, exitCode } = await simulateScenario('default.yaml', lines);
    expect(exitCode).toBe(0);
    const audit = sim!.cluster.audit;
    const by = (user: string) => audit.filter((a) => a.user === user);
    expect(by(FUNCTIONS_USER).map((a) => `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''}`)).toEqual(
      expect.arrayContaining(['patch nodes', 'create pods/eviction', 'create configmaps', 'create events']),
    );
    expect(
      by(FUNCTIONS_USER).filter(
        (a) => a.resource === 'configmaps' && a.verb === 'create' && a.namespace === 'gpu-operator',
      ),
    ).toHaveLength(1);
    // Each write the functions made is one test/contract/rbac.test.ts holds the shipped RBAC to, namespace included.
    expect(by(FUNCTIONS_USER).filter((a) => !coveredBy([...STACK_REQUESTS, ...CGPU_REQUESTS], a))).toEqual([]);
    // And each read: the request list is the functions' whole use of the API, so the least-privilege test
    // (nothing granted that no row uses) rests on a complete list.
    const reads = [...sim!.cluster.reads].filter((r) => r.startsWith(`${FUNCTIONS_USER} `));
    expect(reads.length).toBeGreaterThan(5);
    const unlisted = reads.filter((r) => {
      const [, verb, res, namespace] = r.split(' ');
      const [resource, subresource] = res!.split('/');
      return !coveredBy([...STACK_REQUESTS, ...CGPU_REQUESTS], {
        verb: verb!,
        resource: resource!,
        ...(subresource ? { subresource } : {}),
        ...(namespace ? { namespace } : {}),
      });
    });
    expect(unlisted).toEqual([]);
    expect(by(AGENT_USER).every((a) => a.verb === 'patch' && a.resource === 'nodes')).toBe(true);
    // The admin's writes are the world's (the scenario's pods, the stack's own bookkeeping), never an eviction.
    expect(audit.filter((a) => a.user === 'kubernetes-admin' && a.subresource === 'eviction')).toEqual([]);
  }, 180_000);
});
