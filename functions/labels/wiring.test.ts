import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { catalogEntry, exampleEvent, GPU_INVENTORY } from '../../events/index.ts';
import { DEFAULT_LABELER_CONFIG } from './core/config.ts';
import { createLabelHandler } from './handler.ts';
import { inventory, labeler } from './testing.ts';
import { labelerConfigFromEnv, type LabelWiring } from './wiring.ts';

const dir = mkdtempSync(join(tmpdir(), 'labels-wiring-'));
const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
const example = exampleEvent(catalogEntry(GPU_INVENTORY)!) as Record<string, unknown>;
const envelope = (detailType: string, detail: unknown) =>
  ({ ...example, 'detail-type': detailType, detail }) as unknown as EventBridgeEvent<string, unknown>;

describe('label-nodes wiring and handler', () => {
  it('reads LABELER_CONFIG_FILE, naming file and field of a mistake; the defaults without one', () => {
    expect(labelerConfigFromEnv({})).toEqual(DEFAULT_LABELER_CONFIG);
    expect(
      labelerConfigFromEnv({ LABELER_CONFIG_FILE: file('ok.yaml', 'keys: { gpuCount: gpu-count }\n') }).keys.gpuCount,
    ).toBe('gpu-count');
    expect(() =>
      labelerConfigFromEnv({ LABELER_CONFIG_FILE: file('bad.yaml', 'keys: { gpuCount: "a b" }\n') }),
    ).toThrow(/bad\.yaml is invalid:\n {2}keys\.gpuCount: /);
    expect(() => labelerConfigFromEnv({ LABELER_CONFIG_FILE: join(dir, 'missing.yaml') })).toThrow(
      /LABELER_CONFIG_FILE \S+missing\.yaml: ENOENT/,
    );
  });

  it('labels the node a GPU Inventory names, drops any other detail-type, and acknowledges a node gone', async () => {
    const { kube, publisher, deps } = labeler();
    kube.cluster.addNode({ name: 'gpu-1' });
    const wiring = { ...deps, kube, labelerConfig: DEFAULT_LABELER_CONFIG } as unknown as LabelWiring;
    const handle = createLabelHandler(() => wiring);
    const ctx = { awsRequestId: 'r' } as Context;
    expect(await handle(envelope('GPU Inventory', inventory()), ctx)).toMatchObject({
      status: 'done',
      result: { node: 'gpu-1', changed: expect.arrayContaining(['accelerator unset → nvidia-a100']) },
    });
    expect(publisher.published).toHaveLength(1);
    expect(await handle(envelope('GPU XID Error', inventory()), ctx)).toMatchObject({ status: 'dropped' });
    expect(await handle(envelope('GPU Inventory', inventory({ node: 'gone-1' })), ctx)).toMatchObject({
      status: 'already-done',
    });
  });
});
