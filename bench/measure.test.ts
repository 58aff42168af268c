import { describe, expect, it } from 'vitest';
import { sharesOf } from './cpu-profile.ts';
import { requestKind } from './sim-requests.ts';

describe('requestKind (the sim request counter)', () => {
  it.each([
    ['GET', '/api/v1/nodes/gpu-1', 'get nodes'],
    ['GET', '/api/v1/nodes?labelSelector=gpu-reflex.io%2Fpool%3Dp1&limit=500', 'list nodes'],
    ['GET', '/api/v1/namespaces/train/pods?fieldSelector=spec.nodeName%3Dgpu-1', 'list pods'],
    ['GET', '/api/v1/pods?watch=1', 'watch pods'],
    ['POST', '/api/v1/namespaces/train/pods/w-1/eviction', 'create pods/eviction'],
    ['PATCH', '/api/v1/nodes/gpu-1', 'patch nodes'],
    ['PUT', '/apis/coordination.k8s.io/v1/namespaces/gpu-reflex/leases/remediate-gpu-1', 'update leases'],
    ['GET', '/api/v1/namespaces/gpu-reflex', 'get namespaces'],
    ['DELETE', '/api/v1/namespaces/ml/pods', 'deletecollection pods'],
    ['GET', '/version', undefined],
    ['GET', '/apis/policy/v1', undefined],
  ])('%s %s → %s', (method, url, kind) => {
    expect(requestKind(method, url)).toBe(kind);
  });
});

describe('sharesOf (CPU by part of the stack)', () => {
  const root = process.cwd();
  const frame = (id: number, url: string, children: number[] = [], functionName = 'f') => ({
    id,
    callFrame: { url, functionName },
    children,
  });
  it('charges a sample to its innermost own frame, a library continuation to its package, and leaves idle out', () => {
    const profile = {
      nodes: [
        frame(1, '', [2, 5, 7, 8], '(root)'),
        frame(2, `file://${root}/infra/local/kube/server.ts`, [3]),
        frame(3, `file://${root}/node_modules/yaml/index.js`, [4]),
        frame(4, '', [], 'JSON.stringify'),
        frame(5, `file://${root}/functions/remediate/run.ts`, [6]),
        frame(6, `file://${root}/node_modules/@kubernetes/client-node/dist/x.js`),
        frame(7, `file://${root}/node_modules/@kubernetes/client-node/dist/y.js`),
        frame(8, '', [], '(idle)'),
      ],
      samples: [4, 6, 7, 8, 2],
      timeDeltas: [1000, 2000, 3000, 4000, 5000],
    };
    const s = sharesOf(profile);
    expect(s.ms['simulated cluster']).toBe(6);
    expect(s.ms.functions).toBe(5);
    expect(s.total).toBe(11);
  });
});
