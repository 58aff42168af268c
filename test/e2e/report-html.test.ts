/**
 * The default scenario's `--report run.html` (issue #31), opened in a browser nobody here wrote:
 * headless Chromium (Debian's package) loads the page, and its DOM has one lane per node of the run;
 * a screenshot is taken and checked in CI-safe ways (a PNG of the asked size, not blank), never
 * compared pixel by pixel.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../../infra/local/scenario.ts';
import { startStack, type StackResult } from '../../infra/local/stack.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';
import { commandWorks, requireTool } from '../tools.ts';

const CHROMIUM = ['chromium', 'chromium-browser', 'google-chrome'].find((c) => commandWorks(c, ['--version']));
const chromium = requireTool('chromium', () => CHROMIUM !== undefined);
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--no-first-run'];

describe('the HTML report of the default scenario', () => {
  let dir: string;
  let page: string;
  let result: StackResult;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpu-reflex-html-'));
    page = join(dir, 'default.html');
    const scenario = loadScenario(join(REPO_ROOT, 'infra/local/scenarios/default.yaml'));
    result = await (await startStack(scenario, { clock: 'virtual', reportPath: page, out: () => {} })).run();
  }, 240_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const nodes = () =>
    [...new Set([...result.report.initial.nodes, ...result.report.final.nodes].map((n) => n.metadata.name))].sort();

  it('is written as a page, not JSON, with a lane per node', () => {
    const html = readFileSync(page, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect([...html.matchAll(/class="lane" data-node="([^"]+)"/g)].map((m) => m[1])).toEqual(nodes());
  });

  it(
    'opens in headless Chromium: its DOM has one lane per node, the verdict and the faults',
    { ...chromium.options, timeout: 150_000 },
    () => {
      const r = spawnSync(CHROMIUM!, [...FLAGS, '--dump-dom', `file://${page}`], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(r.status, r.stderr).toBe(0);
      const lanes = [...r.stdout.matchAll(/<div class="lane" data-node="([^"]+)">/g)].map((m) => m[1]);
      expect(lanes).toEqual(nodes());
      expect(r.stdout).toContain('verdict: PASS, 11 of 11 expectations hold');
      // The A100 that fell off the bus: its fault and its drain are on its own lane.
      const a100 = r.stdout.split('<div class="lane" data-node="a100-train-1">')[1]!.split('<div class="lane"')[0]!;
      expect(a100).toMatch(/data-kind="fault"[^>]*title="[^"]*XID 79/);
      expect(a100).toMatch(/data-state="draining"/);
    },
  );

  it('renders to a screenshot of the asked size that is not blank', { ...chromium.options, timeout: 150_000 }, () => {
    const png = join(dir, 'default.png');
    const r = spawnSync(CHROMIUM!, [...FLAGS, '--window-size=1400,560', `--screenshot=${png}`, `file://${page}`], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const bytes = readFileSync(png);
    expect(bytes.subarray(1, 4).toString('latin1')).toBe('PNG');
    // IHDR: width and height, big-endian, at bytes 16 and 20 (PNG specification, 11.2.2).
    expect([bytes.readUInt32BE(16), bytes.readUInt32BE(20)]).toEqual([1400, 560]);
    // A blank page compresses to a few kilobytes; ten lanes of text and colour do not.
    expect(statSync(png).size).toBeGreaterThan(20_000);
  });
});
