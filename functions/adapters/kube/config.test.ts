import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BadInputError } from '../errors.ts';
import { loadKubeConfig } from './config.ts';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster:
    server: http://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: sim
  user:
    token: secret-token-value
contexts:
- name: sim
  context: { cluster: sim, user: sim }
- name: other
  context: { cluster: sim, user: sim, namespace: x }
current-context: sim
`;

const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadKubeConfig', () => {
  it('loads a kubeconfig passed as text (a secret value)', () => {
    const kc = loadKubeConfig({ kubeconfigText: KUBECONFIG });
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'http://127.0.0.1:6443', skipTLSVerify: true });
  });

  it('loads a kubeconfig file and honours an explicit context', () => {
    const path = join(dir, 'config');
    writeFileSync(path, KUBECONFIG);
    const kc = loadKubeConfig({ kubeconfigPath: path, context: 'other' });
    expect(kc.getCurrentContext()).toBe('other');
  });

  it.each([
    [{}, /exactly one/],
    [{ kubeconfigText: KUBECONFIG, inCluster: true }, /exactly one/],
    [{ kubeconfigText: '' }, /kubeconfigText/],
    [{ kubeconfigPath: join(dir, 'missing') }, /cannot load kubeconfigPath/],
  ])('refuses %j', (access, message) => {
    expect(() => loadKubeConfig(access)).toThrow(BadInputError);
    expect(() => loadKubeConfig(access)).toThrow(message);
  });

  it('refuses inCluster outside a pod', () => {
    const saved = process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_HOST;
    try {
      expect(() => loadKubeConfig({ inCluster: true })).toThrow(/KUBERNETES_SERVICE_HOST/);
    } finally {
      if (saved !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved;
    }
  });

  it('refuses unknown options by name', () => {
    expect(() => loadKubeConfig({ kubeconfigText: KUBECONFIG, insecure: true } as never)).toThrow(
      /insecure|unrecognized/i,
    );
  });

  it('never echoes the secret text when it cannot be parsed', () => {
    const secret = 'not: [valid kubeconfig secret-token-xyz';
    let message = '';
    try {
      loadKubeConfig({ kubeconfigText: secret });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/kubeconfigText/);
    expect(message).not.toContain('secret-token-xyz');
  });
});
