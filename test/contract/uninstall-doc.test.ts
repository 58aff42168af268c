import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STATE_CONFIGMAP } from '../../functions/adapters/kube/kube-state-store.ts';
import { cardFenceConfigMap, CARD_FENCE_NAMESPACE } from '../../functions/adapters/kube/kube-card-fence-ops.ts';
import { DEFAULT_MIG_PARTED_CONFIG } from '../../functions/adapters/kube/kube-config-file.ts';
import { RULE_NODE_LABEL } from '../../functions/adapters/kube/kube-device-taint-ops.ts';
import { POOL_SIZE_LEASE } from '../../functions/adapters/alicloud/ports.ts';
import { FACTS, LabelerConfigSchema } from '../../functions/labels/core/config.ts';
import { DEFAULT_TAINT_KEY } from '../../functions/lib/node-state.ts';
import { MIG_CONFIG_LABEL } from '../../functions/mig/core/rebalance.ts';
import { nodeLease } from '../../functions/remediate/run.ts';
import { OPERATOR_CLIENTS } from '../../node-agent/actuator/operator-pause.ts';

/**
 * docs/uninstall.md names everything gpu-reflex leaves in a cluster: every key its code writes on an
 * object (found in the code, not listed here), every label key the labeler writes by default, every
 * Lease the functions take, every object they create by name. A key added to the code without its
 * line on the page fails here.
 */
const root = new URL('../../', import.meta.url).pathname;
const doc = readFileSync(join(root, 'docs/uninstall.md'), 'utf8');
/** A name as the page writes it: in backticks, alone or as a part of a longer code span. */
const named = (name: string) => new RegExp('`[^`\\n]*' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '[^`\\n]*`');

/** The production sources of the functions, the agent and the event catalog (no tests, fakes or fixtures). */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((f) => {
    const p = join(root, dir, f);
    if (statSync(p).isDirectory()) return f === 'fixtures' ? [] : sources(relative(root, p));
    return /\.ts$/.test(f) && !/\.(test|bench)\.ts$|^(testing|fake-.*|contract-.*)\.ts$/.test(f) ? [p] : [];
  });
}
const code = ['functions', 'node-agent', 'events'].flatMap(sources).map((p) => ({
  path: relative(root, p),
  text: readFileSync(p, 'utf8'),
}));

describe('docs/uninstall.md', () => {
  it("names every gpu-reflex.io/ key in the functions', the agent's and the catalog's code", () => {
    const keys = new Map<string, string>();
    for (const { path, text } of code)
      for (const m of text.matchAll(/gpu-reflex\.io\/[A-Za-z0-9._-]*[A-Za-z0-9]/g)) keys.set(m[0], path);
    expect(keys.size).toBeGreaterThan(15);
    expect([...keys].filter(([k]) => !named(k).test(doc)).map(([k, path]) => `${k} (${path})`)).toEqual([]);
  });

  it("names every label the labeler writes by default, and remediation's taint", () => {
    const { prefix } = LabelerConfigSchema.parse({});
    const labels = Object.entries(FACTS).map(([fact, name]) => (name === undefined ? fact : `${prefix}${name}`));
    expect(labels).toContain('accelerator');
    expect(labels.filter((l) => !named(l).test(doc))).toEqual([]);
    expect(doc).toMatch(named(DEFAULT_TAINT_KEY));
  });

  it('names every Lease the functions take', () => {
    // Each withLease(<name>, …) call's name: its string literals and template prefixes, or a
    // helper this test evaluates; an unknown expression fails until it is added here and to the page.
    const resolve: Record<string, string> = {
      'nodeLease(': nodeLease('<node>'),
      POOL_SIZE_LEASE: POOL_SIZE_LEASE,
    };
    const leases = new Set<string>();
    for (const { path, text } of code.filter((c) => c.path !== 'functions/lib/reflex.ts'))
      for (const m of text.matchAll(/withLease\(\s*([^,]+),/g)) {
        const arg = m[1]!;
        const literals = [...arg.matchAll(/'([^']+)'|`([^`$]+)\$\{/g)].map((l) => l[1] ?? `${l[2]}<node>`);
        const helper = Object.keys(resolve).find((h) => arg.startsWith(h));
        const found = literals.length ? literals : helper ? [resolve[helper]!] : [];
        expect(found, `${path}: withLease(${arg}, …): a name this test can read`).not.toEqual([]);
        for (const l of found) leases.add(l);
      }
    expect([...leases].sort()).toEqual(
      expect.arrayContaining(['autoscale-pools', 'rebalance-mig', 'remediate-<node>', 'rewrite-quotas']),
    );
    expect([...leases].filter((l) => !named(l).test(doc))).toEqual([]);
  });

  it('names every object the functions create or fill by name, and the labels they set outside their prefix', () => {
    for (const name of [
      STATE_CONFIGMAP,
      `${CARD_FENCE_NAMESPACE}/${cardFenceConfigMap('<node>')}`,
      `${DEFAULT_MIG_PARTED_CONFIG.namespace}/${DEFAULT_MIG_PARTED_CONFIG.name}`,
      RULE_NODE_LABEL,
      MIG_CONFIG_LABEL,
      ...OPERATOR_CLIENTS.map((c) => c.label.replace(/^nvidia\.com\/gpu\.deploy\./, '')),
    ])
      expect(doc, name).toMatch(named(name));
  });
});
