import { execFile } from 'node:child_process';
import { join } from 'node:path';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * kubectl against a simulated cluster, as a person would run it: its own kubeconfig, a cache and HOME in the test's
 * scratch folder (nothing of the machine's own configuration leaks in), the exit code kept rather than thrown.
 */
export function kubectlIn(dir: string, kubeconfig: string): (args: string[]) => Promise<KubectlResult> {
  return (args) =>
    new Promise((done) => {
      execFile(
        'kubectl',
        ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args],
        { env: { ...process.env, HOME: dir, KUBECONFIG: '' } },
        (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
}
