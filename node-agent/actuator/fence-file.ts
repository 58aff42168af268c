/**
 * The ACK GPU device plugin's unhealthy-devices file (`/etc/nvidia-device-plugin/unhealthyDevices.json`,
 * `{"index": ["0", "3"], "uuid": ["GPU-…"]}`): a device listed there leaves the node's allocatable
 * when the plugin re-reads it. Other tools (ACK's node-problem-detector, a person) write it too, so
 * the agent keeps its own record of the entries it added (`<file>.gpu-reflex.json`) and removes only
 * those. Writes go to a temporary file renamed over the original, so the plugin never reads half a file.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { FenceFileOps } from './actuator.ts';

interface Unhealthy {
  index: string[];
  uuid: string[];
}

export class FenceFile implements FenceFileOps {
  constructor(readonly path: string) {}

  /**
   * What the file lists now (missing or empty: nothing). A file there that cannot be read or is not this shape (a
   * hand edit with a stray comma, another writer's half-written file) throws: it is unknown, never "nothing" — every
   * write here rewrites the whole file from what was read, so reading it as nothing would write the other writers'
   * isolated GPUs out of it, back into the node's allocatable.
   */
  read(): Unhealthy {
    if (!existsSync(this.path)) return { index: [], uuid: [] };
    let text: string;
    let raw: unknown;
    try {
      text = readFileSync(this.path, 'utf8');
      if (text.trim() === '') return { index: [], uuid: [] };
      raw = JSON.parse(text);
    } catch (err) {
      throw new Error(`fence file not readable: ${this.path}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const list = (v: unknown) => v === undefined || (Array.isArray(v) && v.every((x) => typeof x !== 'object'));
    const r = raw as Partial<Record<keyof Unhealthy, unknown[]>> | null;
    if (!r || typeof r !== 'object' || Array.isArray(r) || !list(r.index) || !list(r.uuid))
      throw new Error(`fence file not readable: ${this.path}: not {"index": [...], "uuid": [...]}`);
    return { index: (r.index ?? []).map(String), uuid: (r.uuid ?? []).map(String) };
  }

  /**
   * The UUIDs gpu-reflex added (its own record; missing: none yet). A record there that cannot be read or is not a
   * list of UUIDs throws: unknown, never "none of ours" — read as none, an unfence would find the GPU not its own and
   * answer done while it stays listed, and the next fence would write the record over, losing the other claims.
   * Only this agent writes the record, always whole, so an empty one is damage too.
   */
  ours(): string[] {
    const record = `${this.path}.gpu-reflex.json`;
    if (!existsSync(record)) return [];
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(record, 'utf8'));
    } catch (err) {
      throw new Error(
        `fence file's record of gpu-reflex's own entries not readable: ${record}: ` +
          `${err instanceof Error ? err.message : String(err)}`,
      );
    }
    if (!Array.isArray(raw) || !raw.every((u) => typeof u === 'string'))
      throw new Error(`fence file's record of gpu-reflex's own entries not readable: ${record}: not a list of UUIDs`);
    return raw;
  }

  /**
   * The record first, then the file: an agent killed between the two leaves a claim on an entry not
   * yet written (the retried fence writes it), never an entry nobody owns — one a retried fence would
   * find "listed already" and no unfence would ever remove. A file write that fails takes the claim back.
   */
  add(uuid: string): void {
    const now = this.read();
    if (now.uuid.includes(uuid)) return; // listed already (by us or by someone else): nothing to add, nothing to own
    const ours = this.ours();
    this.writeOurs([...ours, uuid]);
    try {
      this.write({ ...now, uuid: [...now.uuid, uuid] });
    } catch (err) {
      if (!ours.includes(uuid)) this.writeOurs(ours);
      throw err;
    }
  }

  remove(uuid: string): boolean {
    const ours = this.ours();
    if (!ours.includes(uuid)) return false;
    const now = this.read();
    this.write({ ...now, uuid: now.uuid.filter((u) => u !== uuid) });
    this.writeOurs(ours.filter((u) => u !== uuid));
    return true;
  }

  private write(content: Unhealthy): void {
    atomicWrite(this.path, JSON.stringify(content));
  }

  private writeOurs(uuids: string[]): void {
    atomicWrite(`${this.path}.gpu-reflex.json`, JSON.stringify([...new Set(uuids)]));
  }
}

function atomicWrite(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}
