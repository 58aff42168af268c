import { describe, expect, it } from 'vitest';
import { REMEDIATION_ACTIONS } from '../../../events/xid.ts';
import type { FaultSite } from './scope.ts';
import { actionWords, letFinishWords, unknownWorkloadWords, wouldWords } from './words.ts';

const node: FaultSite = { scope: 'node', node: 'n1', trigger: 'xid-79', key: 'n1/xid-79' };
const reason = (doing: string) => `XID 79 on node n1. XID 79 → drain-node. Now ${doing}; next: a person repairs`;

describe('wouldWords: a dry run says what it would do, in the conditional', () => {
  it.each(REMEDIATION_ACTIONS.map((a) => [a]))('rewords %s', (action) => {
    const said = wouldWords(reason(actionWords(action, 'n1', node, 2)));
    expect(said).not.toContain('Now ');
    expect(said).toMatch(/\. Would [a-z]+/);
  });

  it('rewords a quarantine that lets the pods finish and an unknown workload too', () => {
    expect(wouldWords(reason(letFinishWords(node, 1, '12:00')))).toMatch(/Would quarantine /);
    expect(wouldWords(reason(unknownWorkloadWords(node)))).toMatch(/Would count one incident/);
  });

  it('says "Would drain node n1", and leaves a reason with no action in it as it was', () => {
    expect(wouldWords(reason(actionWords('drain-node', 'n1', node, 2)))).toContain(
      'Would drain node n1: taint, cordon, evict 2 pods',
    );
    expect(wouldWords('Held back by the blast radius')).toBe('Held back by the blast radius');
  });
});
