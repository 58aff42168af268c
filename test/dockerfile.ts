import { cpSync, mkdirSync, statSync } from 'node:fs';
import { basename, join, posix } from 'node:path';

/**
 * Just enough of a Dockerfile reader for the agent image's tests (no Docker engine runs here):
 * stages with their platform, WORKDIR, COPY and RUN instructions and USER, line continuations and
 * comments handled.
 */
export interface Copy {
  from?: string;
  sources: string[];
  dest: string;
  line: number;
}
export interface Stage {
  name: string;
  image: string;
  /** `FROM --platform=…`'s value, e.g. `$BUILDPLATFORM`; absent: the target platform. */
  platform?: string;
  /** The stage's ARG names (TARGETARCH and the like), in order. */
  args: string[];
  /** Its RUN commands (shell form), in order. */
  runs: string[];
  workdir: string;
  copies: Copy[];
  user?: string;
  entrypoint?: string[];
}

export function parseDockerfile(text: string): { args: string[]; stages: Stage[] } {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const args: string[] = [];
  const stages: Stage[] = [];
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const [op, ...rest] = line.split(/\s+/);
    const words = rest.filter((w) => !w.startsWith('--') || w.startsWith('--from='));
    const stage = stages.at(-1);
    switch (op!.toUpperCase()) {
      case 'ARG':
        if (!stage) args.push(rest[0]!.split('=')[0]!);
        else stage.args.push(rest[0]!.split('=')[0]!);
        break;
      case 'FROM': {
        const platform = rest.find((w) => w.startsWith('--platform='))?.slice('--platform='.length);
        stages.push({
          image: words[0]!,
          name: words[2] ?? String(stages.length),
          ...(platform ? { platform } : {}),
          workdir: '/',
          args: [],
          runs: [],
          copies: [],
        });
        break;
      }
      case 'RUN':
        stage!.runs.push(rest.join(' '));
        break;
      case 'WORKDIR':
        stage!.workdir = posix.resolve(stage!.workdir, rest[0]!);
        break;
      case 'USER':
        stage!.user = rest[0];
        break;
      case 'ENTRYPOINT':
        stage!.entrypoint = JSON.parse(rest.join(' ')) as string[];
        break;
      case 'COPY': {
        const from = words[0]?.startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
        const dest = words.at(-1)!;
        // Absolute, with a trailing slash kept: it says "into this directory".
        stage!.copies.push({
          from,
          sources: words.slice(0, -1),
          dest: posix.resolve(stage!.workdir, dest) + (dest.endsWith('/') ? '/' : ''),
          line: i + 1,
        });
        break;
      }
    }
  });
  return { args, stages };
}

/**
 * Lays out what a stage's `COPY --from=<fromStage>` instructions put in the image, under `into`,
 * taking the other stage's files from `repo` (its WORKDIR is the repository, built). Docker's
 * rules: a directory source copies its contents; several sources need a directory destination.
 */
export function assembleStage(stage: Stage, fromStage: Stage, repo: string, into: string): void {
  for (const c of stage.copies.filter((x) => x.from === fromStage.name)) {
    for (const src of c.sources) {
      const from = join(repo, posix.relative(fromStage.workdir, posix.resolve(fromStage.workdir, src)));
      const toDir = c.dest.endsWith('/') || c.sources.length > 1 || statSync(from).isDirectory();
      const to = join(into, c.dest, toDir && !statSync(from).isDirectory() ? basename(src) : '');
      mkdirSync(toDir ? join(into, c.dest) : join(into, posix.dirname(c.dest)), { recursive: true });
      cpSync(from, to, { recursive: true });
    }
  }
}
