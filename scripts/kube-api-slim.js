// esbuild plugin: keeps only the listed operations of @kubernetes/client-node's generated API
// classes. Each API group is three to five generated classes (request factory, response processor,
// Observable, ObjectParam and Promise wrappers) with every operation of the group: CoreV1 alone is
// ~0.6 MB minified of which the functions call ~20 operations. Methods are removed by name with
// TypeScript's parser (byte ranges of whole members, nothing else rewritten); classes of groups
// not listed are left as they are (esbuild drops the unused ones).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

const FILES = new RegExp(
  /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]gen[\\/]/.source +
    /(apis[\\/][A-Za-z0-9]+Api|types[\\/](ObservableAPI|ObjectParamAPI|PromiseAPI))\.js$/.source,
);

/** The API group a generated class belongs to: ObservableCoreV1Api, CoreV1ApiRequestFactory → CoreV1Api. */
export function groupOf(className) {
  return className.replace(/^(Observable|Object|Promise)/, '').replace(/(RequestFactory|ResponseProcessor)$/, '');
}

/**
 * The source with, in every class of a listed group, only the constructor and the listed
 * operations (`op` and `opWithHttpInfo`) left.
 */
export function slimApiSource(text, keep, fileName = 'api.js') {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const cuts = [];
  for (const st of sf.statements) {
    if (!ts.isClassDeclaration(st) || !st.name) continue;
    const ops = keep[groupOf(st.name.text)];
    if (!ops) continue;
    const names = new Set(ops.flatMap((op) => [op, `${op}WithHttpInfo`]));
    for (const m of st.members) {
      if (!ts.isMethodDeclaration(m)) continue;
      const name = m.name && ts.isIdentifier(m.name) ? m.name.text : undefined;
      if (name === undefined || !names.has(name)) cuts.push([m.getFullStart(), m.getEnd()]);
    }
  }
  let out = text;
  for (const [a, b] of cuts.sort((x, y) => y[0] - x[0])) out = out.slice(0, a) + out.slice(b);
  return out;
}

const SERIALIZER = /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]gen[\\/]models[\\/]ObjectSerializer\.js$/;

/**
 * The model types the kept operations can (de)serialize: every model named in their source, and
 * every model those name in their attributes, transitively. ObjectSerializer passes a type it does
 * not know through untouched, so the closure must be whole: it is computed from the models' own
 * attribute maps (loaded from client-node), never guessed.
 */
export async function modelClosure(keep, genDir) {
  const models = await import(pathToFileURL(join(genDir, 'models', 'all.js')).href);
  const known = (w) => typeof models[w]?.getAttributeTypeMap === 'function';
  const seeds = new Set();
  for (const group of Object.keys(keep)) {
    const text = slimApiSource(await readFile(join(genDir, 'apis', `${group}.js`), 'utf8'), keep);
    for (const lit of text.matchAll(/"([^"\\]*)"/g))
      for (const w of lit[1].match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) if (known(w)) seeds.add(w);
  }
  const closure = new Set();
  const visit = (name) => {
    if (closure.has(name)) return;
    closure.add(name);
    const m = models[name];
    for (const a of m.getAttributeTypeMap())
      for (const w of String(a.type).match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) if (known(w)) visit(w);
    for (const t of Object.values(m.mapping ?? {})) if (known(t)) visit(t);
  };
  seeds.forEach(visit);
  return closure;
}

/** ObjectSerializer.js with only the `types` in its typeMap (and their imports). */
export function slimSerializerSource(text, types) {
  let removed = 0;
  const out = text.split('\n').filter((line) => {
    const m =
      line.match(/^import \{ ([A-Za-z0-9_]+) \} from '\.\.\/models\/[A-Za-z0-9_]+\.js';$/) ??
      line.match(/^ {4}"([A-Za-z0-9_]+)": ([A-Za-z0-9_]+),?$/);
    if (!m || types.has(m[1])) return true;
    removed++;
    return false;
  });
  if (removed === 0)
    throw new Error(
      'kube-api-slim: ObjectSerializer.js has a shape this plugin does not know (no typeMap entry matched)',
    );
  return out.join('\n');
}

/** @param {Record<string, readonly string[]>} keep API group → operations to keep */
export function kubeApiSlim(keep) {
  const genDir = join(
    dirname(createRequire(import.meta.url).resolve('@kubernetes/client-node/package.json')),
    'dist',
    'gen',
  );
  let closure;
  // One plugin serves every function's build: each file is slimmed once.
  const slimmed = new Map();
  const once = (path, make) => {
    if (!slimmed.has(path)) slimmed.set(path, make());
    return slimmed.get(path);
  };
  return {
    name: 'kube-api-slim',
    setup(b) {
      // A model module only defines its class (and sets statics on it, which esbuild counts as a
      // side effect): declared pure, so the models nothing uses are dropped, not just unreferenced.
      b.onResolve({ filter: /^\.\.?\/.*\.js$/ }, (args) => {
        if (!args.importer.startsWith(genDir)) return undefined;
        const path = join(args.resolveDir, args.path);
        if (dirname(path) !== join(genDir, 'models') || /[\\/](ObjectSerializer|all)\.js$/.test(path)) return undefined;
        return { path, sideEffects: false };
      });
      b.onLoad({ filter: FILES }, async (args) => ({
        contents: await once(args.path, async () => slimApiSource(await readFile(args.path, 'utf8'), keep, args.path)),
        loader: 'js',
      }));
      b.onLoad({ filter: SERIALIZER }, async (args) => {
        closure ??= modelClosure(keep, genDir);
        return {
          contents: await once(args.path, async () =>
            slimSerializerSource(await readFile(args.path, 'utf8'), await closure),
          ),
          loader: 'js',
        };
      });
    },
  };
}
