import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The public surface of the package as the compiler API sees it: a program over the source of
 * every entry point package.json exports, and a walk of the declarations its exports reach.
 * What each architecture test checks along the walk is its own.
 */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The source entry points: each `types` of package.json's exports, from dist/ back to src/. */
export function entryPoints(): string[] {
  const exports: Record<string, unknown> = JSON.parse(
    readFileSync(resolve(ROOT, 'package.json'), 'utf8'),
  ).exports;
  return Object.values(exports).flatMap((target) => {
    const types = (target as { types?: string }).types;
    return types === undefined
      ? []
      : [resolve(ROOT, types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'))];
  });
}

export function compilerOptions(): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    resolve(ROOT, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (parsed === undefined) throw new Error('tsconfig.build.json could not be read');
  return { ...parsed.options, noEmit: true };
}

/** The program over the entry points, built as tsconfig.build.json builds the package. */
export function entryProgram(): { program: ts.Program; entries: string[] } {
  const entries = entryPoints();
  return { program: ts.createProgram({ rootNames: entries, options: compilerOptions() }), entries };
}

/**
 * A program of one in-memory module at `dir`/index.ts under the project, for checking a check
 * itself: `root` stands for the project in the walk, `entry` for its one entry point.
 */
export function fixture(
  dir: string,
  source: string,
): { program: ts.Program; entry: string; root: string } {
  const root = resolve(ROOT, dir);
  const entry = resolve(root, 'index.ts');
  const options = { ...compilerOptions(), types: [] };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (file, language, ...rest) =>
    file === entry
      ? ts.createSourceFile(file, source, language, true)
      : getSourceFile(file, language, ...rest);
  const fileExists = host.fileExists;
  host.fileExists = (file) => file === entry || fileExists(file);
  return {
    program: ts.createProgram({ rootNames: [entry], options, host }),
    entry,
    root: `${root}/`,
  };
}

/** Private, protected and #private members are not the public API. */
export function hidden(node: ts.Node): boolean {
  const name = (node as { name?: ts.Node }).name;
  if (name !== undefined && ts.isPrivateIdentifier(name)) return true;
  const flags = ts.getCombinedModifierFlags(node as ts.Declaration);
  return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
}

/** Declarations a user can see by hovering: what the walk follows from signatures. */
export function isTypeDeclaration(node: ts.Node): boolean {
  return (
    ts.isInterfaceDeclaration(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isClassDeclaration(node) ||
    ts.isEnumDeclaration(node)
  );
}

/** Declared in the project under `root`, not in a dependency. */
export function inProject(node: ts.Node, root: string): boolean {
  const file = node.getSourceFile().fileName;
  return file.startsWith(root) && !file.includes('/node_modules/');
}

/** Where `node` starts, as `file:line` relative to `root`. */
export function at(node: ts.Node, root: string): string {
  const file = node.getSourceFile();
  const line = file.getLineAndCharacterOfPosition(node.getStart()).line + 1;
  return `${relative(root, file.fileName)}:${line}`;
}

/**
 * The declarations reached from the exports of `entries`, each visited once, in the order they
 * are queued: first each export's own declarations, followed through re-exports and named as it
 * is exported, then whatever the visits queue. `exported` holds every export's own symbol, so a
 * check can tell what a user can import.
 */
export class ExportWalk {
  readonly exported = new Set<ts.Symbol>();
  readonly #pending: { node: ts.Node; name: string }[] = [];
  readonly #visited = new Set<ts.Node>();

  constructor(program: ts.Program, entries: string[]) {
    const checker = program.getTypeChecker();
    for (const file of entries) {
      const source = program.getSourceFile(file);
      const module = source && checker.getSymbolAtLocation(source);
      if (module === undefined) throw new Error(`no module at ${file}`);
      for (const symbol of checker.getExportsOfModule(module)) {
        const target =
          symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        this.exported.add(target);
        for (const node of target.declarations ?? []) this.queue(node, symbol.name);
      }
    }
  }

  /** Queues `node` under `name`; a node queued again is visited once, under its first name. */
  queue(node: ts.Node, name: string): void {
    this.#pending.push({ node, name });
  }

  /** Visits what is queued, and what the visits queue, until nothing is left. */
  run(visit: (node: ts.Node, name: string) => void): void {
    for (let next = this.#pending.shift(); next !== undefined; next = this.#pending.shift()) {
      if (this.#visited.has(next.node)) continue;
      this.#visited.add(next.node);
      visit(next.node, next.name);
    }
  }
}
