/**
 * A kubeconfig for the simulated cluster. `insecure-skip-tls-verify` is required by
 * @kubernetes/client-node for plain-http servers; the token is a placeholder (no auth here).
 */
export function kubeconfigYaml(url: string, name = 'gpu-reflex-sim'): string {
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
    '',
  ].join('\n');
}
