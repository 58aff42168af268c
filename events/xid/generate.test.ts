import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CATALOG_TABLE,
  DECODE_TABLE,
  GENERATED,
  GENERATED_NAMES,
  parseCatalog,
  parseDecode,
  render,
} from './generate.ts';

const HEADER = 'code\tmnemonic\tdescription\timmediate_action\tinvestigatory_action\n';

describe('events/xid/generate.ts', () => {
  it('nvidia.generated.ts and nvidia-names.generated.ts are what the committed tables generate (run npx tsx events/xid/generate.ts)', () => {
    const out = render(readFileSync(CATALOG_TABLE, 'utf8'), readFileSync(DECODE_TABLE, 'utf8'));
    expect(readFileSync(GENERATED, 'utf8')).toBe(out.catalog);
    expect(readFileSync(GENERATED_NAMES, 'utf8')).toBe(out.names);
  });

  it('reads NVIDIA line breaks, and an empty bucket as NONE_GIVEN', () => {
    const [e] = parseCatalog(`# source\n${HEADER}45\tM\tline one\\nline two\t\t\n`);
    expect(e).toEqual({
      code: 45,
      mnemonic: 'M',
      description: 'line one\nline two',
      immediate: 'NONE_GIVEN',
      investigatory: '',
    });
  });

  it.each([
    ['a bucket nobody decided on', `${HEADER}200\tM\tD\tREPLACE_DATACENTER\t\n`, /bucket "REPLACE_DATACENTER" is new/],
    ['a code listed twice', `${HEADER}8\tA\tB\tIGNORE\t\n8\tA\tB\tIGNORE\t\n`, /XID 8 is listed twice/],
    ['a short row', `${HEADER}8\tA\tB\n`, /:2: expected 5 tab-separated cells/],
    ['other columns', 'code\tname\n', /expected the columns/],
  ])('stops on %s, naming the line', (_, text, error) => {
    expect(() => parseCatalog(text)).toThrow(error);
  });

  it('stops on a decode row whose pattern is not 32 bits', () => {
    const head =
      'xid\tunit\tintrinfo_v1\tintrinfo_v2\terror_status\tresolution\tinvestigatory\tseverity\taction2\thw_sw\tlocal_remote\n';
    expect(() => parseDecode(`${head}149\tU\t0101\t${'-'.repeat(32)}\t0x1\tIGNORE\t\t\t\t\t\n`)).toThrow(
      /intrinfo_v1 "0101" is not 32 characters/,
    );
  });
});
