/**
 * A kubeconfig for the simulated cluster. `insecure-skip-tls-verify` is required by
 * @kubernetes/client-node for plain-http servers; the token is the cluster admin's (`system:masters`).
 * `as`: every request impersonates that user (kubectl's and client-node's `user.as`), so RBAC decides
 * it as the real server would (access-review.ts).
 */
export function kubeconfigYaml(url: string, name = 'gpu-reflex-sim', as?: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${url}`,
    '    insecure-skip-tls-verify: true',
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${name}`,
    '    namespace: default',
    `current-context: ${name}`,
    'preferences: {}',
    'users:',
    `- name: ${name}`,
    '  user:',
    '    token: gpu-reflex-sim-token',
    ...(as ? [`    as: ${JSON.stringify(as)}`] : []),
    '',
  ].join('\n');
}
