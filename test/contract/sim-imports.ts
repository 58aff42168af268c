/**
 * What a set of TypeScript files imports, read with the compiler's own parser (static imports and
 * re-exports, `import type` told apart, and dynamic `import('…')`), and the imports from product
 * code (functions/, node-agent/) reachable from them. Used by sim-independence.test.ts; `root`
 * lets the same check run on another checkout.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export interface Import {
  from: string;
  /** Repository-relative path of what it names; undefined for a package. */
  target: string | undefined;
  typeOnly: boolean;
}

export function importsOf(root: string, file: string): Import[] {
  const text = readFileSync(join(root, file), 'utf8');
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: Import[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    const target = spec.startsWith('.') ? relative(root, resolve(root, dirname(file), spec)) : undefined;
    out.push({ from: spec, target, typeOnly });
  };
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier))
      add(n.moduleSpecifier.text, n.importClause?.isTypeOnly ?? false);
    else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier))
      add(n.moduleSpecifier.text, n.isTypeOnly);
    else if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments[0] &&
      ts.isStringLiteral(n.arguments[0])
    )
      add(n.arguments[0].text, false);
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

/** Every non-test .ts file of the listed paths (a folder: everything under it). */
export function expand(root: string, paths: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    const abs = join(root, p);
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) for (const e of readdirSync(abs).sort()) walk(join(p, e));
    else if (p.endsWith('.ts') && !p.endsWith('.test.ts')) out.push(p);
  };
  for (const p of paths) walk(p);
  return out;
}

const PRODUCT = /^(functions|node-agent)\//;

export interface Violation {
  /** The simulator file whose imports reach product code. */
  file: string;
  /** file → … → the product module. */
  chain: string[];
}

/**
 * Product modules each file reaches. A product module named in `utilities` is allowed (and its
 * own imports are checked in turn); a file in `skip` is not followed (a known exception, listed
 * apart). Type-only imports of a file's own are violations too (the product's model shaping the
 * world), but are not followed further: they are erased, so no code behind them runs.
 */
export function violations(
  root: string,
  files: readonly string[],
  utilities: ReadonlySet<string>,
  skip: ReadonlySet<string>,
): Violation[] {
  const out: Violation[] = [];
  for (const file of files) {
    const seen = new Set<string>([file]);
    const queue: string[][] = [[file]];
    while (queue.length > 0) {
      const chain = queue.shift()!;
      const at = chain[chain.length - 1]!;
      for (const imp of importsOf(root, at)) {
        const t = imp.target;
        if (t === undefined || seen.has(t) || skip.has(t)) continue;
        if (PRODUCT.test(t) && !utilities.has(t)) {
          // Each product module once per file, by its shortest chain (the queue is breadth-first).
          seen.add(t);
          out.push({ file, chain: [...chain, t] });
          continue;
        }
        if (imp.typeOnly || !existsSync(join(root, t))) continue;
        seen.add(t);
        queue.push([...chain, t]);
      }
    }
  }
  return out;
}
