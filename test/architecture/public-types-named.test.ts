import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * Every type of the package that a public signature names can be imported by its users: each
 * interface, type alias, class or enum reached from an export of an entry point (its members,
 * parameters, results, heritage, and the types those name in turn) is itself exported by an
 * entry point. Otherwise a user cannot write the type of what the package hands them, and
 * `tsc --declaration` of their code fails (TS2742, TS4023: "cannot be named").
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Types still reached and not exported, by name; this list may only shrink. They are reached
 * only through constructors the package calls itself (RemoteQueue's, EngineQueue's).
 */
const PENDING: ReadonlySet<string> = new Set([
  'Channel',
  'ChannelReceive',
  'HttpTransport',
  'ReceiptBook',
  'RequestOptions',
  'ServerLimits',
  'ServerLimitsReader',
  'TransportOptions',
  'WakeSignal',
  'WireDelivery',
  'WireOperation',
  'WireOutcome',
]);

/** The source entry points: each `types` of package.json's exports, from dist/ back to src/. */
function entryPoints(): string[] {
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

function compilerOptions(): ts.CompilerOptions {
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

/** Private, protected and #private members are not the public API. */
function hidden(node: ts.Node): boolean {
  const name = (node as { name?: ts.Node }).name;
  if (name !== undefined && ts.isPrivateIdentifier(name)) return true;
  const flags = ts.getCombinedModifierFlags(node as ts.Declaration);
  return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
}

function isTypeDeclaration(node: ts.Node): boolean {
  return (
    ts.isInterfaceDeclaration(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isClassDeclaration(node) ||
    ts.isEnumDeclaration(node)
  );
}

/**
 * The types of the project that the public surface of `entries` names and no entry exports,
 * each as `Name (file:line), named by Export.member`.
 */
function unnamedTypes(program: ts.Program, entries: string[], root: string): string[] {
  const checker = program.getTypeChecker();
  const inProject = (node: ts.Node) => {
    const file = node.getSourceFile().fileName;
    return file.startsWith(root) && !file.includes('/node_modules/');
  };
  const exported = new Set<ts.Symbol>();
  const queue: { node: ts.Node; owner: string }[] = [];
  for (const file of entries) {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`no module at ${file}`);
    for (const symbol of checker.getExportsOfModule(module)) {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      exported.add(target);
      for (const node of target.declarations ?? []) queue.push({ node, owner: symbol.name });
    }
  }
  const missing = new Map<ts.Symbol, string>();
  const visited = new Set<ts.Node>();

  const reach = (symbol: ts.Symbol | undefined, owner: string) => {
    if (symbol === undefined) return;
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const declarations = (target.declarations ?? []).filter(
      (node) => inProject(node) && isTypeDeclaration(node),
    );
    if (declarations.length === 0) return;
    if (!exported.has(target) && !missing.has(target)) {
      const node = declarations[0] as ts.Node;
      const file = node.getSourceFile();
      const line = file.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      missing.set(
        target,
        `${target.name} (${relative(root, file.fileName)}:${line}), named by ${owner}`,
      );
    }
    for (const node of declarations) queue.push({ node, owner: target.name });
  };

  /** The types a written type node names; type literals' members are walked as members. */
  const typeNode = (node: ts.Node | undefined, owner: string) => {
    if (node === undefined) return;
    const visit = (child: ts.Node) => {
      if (ts.isTypeReferenceNode(child)) reach(checker.getSymbolAtLocation(child.typeName), owner);
      else if (ts.isExpressionWithTypeArguments(child))
        reach(checker.getSymbolAtLocation(child.expression), owner);
      else if (ts.isTypeQueryNode(child)) return;
      if (ts.isTypeLiteralNode(child)) {
        for (const m of child.members) member(m, owner);
        return;
      }
      ts.forEachChild(child, visit);
    };
    visit(node);
  };

  /** The types of an inferred type: its alias or own symbol, and its type arguments. */
  const inferred = (type: ts.Type, owner: string, depth = 0) => {
    if (depth > 3) return;
    reach(type.aliasSymbol ?? type.getSymbol(), owner);
    for (const argument of type.aliasTypeArguments ?? []) inferred(argument, owner, depth + 1);
    if (type.isUnionOrIntersection())
      for (const part of type.types) inferred(part, owner, depth + 1);
    if (
      type.flags & ts.TypeFlags.Object &&
      (type as ts.ObjectType).objectFlags & ts.ObjectFlags.Reference
    )
      for (const argument of checker.getTypeArguments(type as ts.TypeReference))
        inferred(argument, owner, depth + 1);
  };

  const signature = (node: ts.SignatureDeclaration, owner: string) => {
    for (const parameter of node.parameters) typeNode(parameter.type, owner);
    for (const parameter of node.typeParameters ?? []) {
      typeNode(parameter.constraint, owner);
      typeNode(parameter.default, owner);
    }
    if (node.type !== undefined) typeNode(node.type, owner);
    else if (!ts.isConstructorDeclaration(node) && !ts.isSetAccessorDeclaration(node)) {
      const found = checker.getSignatureFromDeclaration(node);
      if (found !== undefined) inferred(checker.getReturnTypeOfSignature(found), owner);
    }
  };

  function member(node: ts.Node, owner: string) {
    if (ts.isConstructorDeclaration(node)) {
      if (!hidden(node)) signature(node, owner);
      for (const parameter of node.parameters)
        if (ts.isParameterPropertyDeclaration(parameter, node) && !hidden(parameter))
          typeNode(parameter.type, owner);
      return;
    }
    if (hidden(node) || ts.isClassStaticBlockDeclaration(node)) return;
    const key = (node as { name?: ts.Node }).name;
    const name = key === undefined ? owner : `${owner}.${key.getText()}`;
    if (ts.isFunctionLike(node)) signature(node, name);
    else typeNode((node as { type?: ts.TypeNode }).type, name);
  }

  const declaration = (node: ts.Node, owner: string) => {
    if (ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) {
      for (const clause of node.heritageClauses ?? []) typeNode(clause, owner);
      for (const parameter of node.typeParameters ?? []) typeNode(parameter, owner);
      for (const m of node.members) member(m, owner);
    } else if (ts.isTypeAliasDeclaration(node)) {
      for (const parameter of node.typeParameters ?? []) typeNode(parameter, owner);
      typeNode(node.type, owner);
    } else if (ts.isFunctionDeclaration(node)) {
      signature(node, owner);
    } else if (ts.isVariableDeclaration(node)) {
      if (node.type !== undefined) typeNode(node.type, owner);
      else inferred(checker.getTypeAtLocation(node.name), owner);
    }
  };

  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    if (visited.has(next.node)) continue;
    visited.add(next.node);
    declaration(next.node, next.owner);
  }
  return [...missing.values()].sort();
}

/** A program of one in-memory module at `root`/index.ts, for checking the check itself. */
function fixture(source: string): { program: ts.Program; entry: string; root: string } {
  const root = resolve(ROOT, '.public-types-fixture');
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

describe('every type a public signature names is exported', () => {
  let unnamed: string[];

  beforeAll(() => {
    const entries = entryPoints();
    const program = ts.createProgram({ rootNames: entries, options: compilerOptions() });
    unnamed = unnamedTypes(program, entries, ROOT);
  }, 30_000);

  it('by an entry point of package.json, but those still listed as pending', () => {
    const name = (line: string) => line.split(' ')[0] ?? line;
    expect(unnamed.filter((line) => !PENDING.has(name(line)))).toEqual([]);
    // The list only shrinks: a type exported since (or no longer reached) must leave it.
    const names = new Set(unnamed.map(name));
    expect([...PENDING].filter((type) => !names.has(type))).toEqual([]);
  });

  it('the check finds a type named by a member, a result and an inferred result', () => {
    const { program, entry, root } = fixture(`
      interface Inner { value: number }
      interface Row { inner: Inner }
      type Mode = 'a' | 'b';
      class Handle { readonly mode: Mode = 'a'; }
      /** Exported: what it names is reached. */
      export interface Api {
        rows(): Promise<Row[]>;
        handle(): Handle;
      }
      export function made() { return new Handle(); }
      export interface Seen { value: number }
      export function seen(): Seen { return { value: 1 }; }
    `);
    expect(unnamedTypes(program, [entry], root).map((line) => line.split(' ')[0])).toEqual([
      'Handle',
      'Inner',
      'Mode',
      'Row',
    ]);
  });
});
