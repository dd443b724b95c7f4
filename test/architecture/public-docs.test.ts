import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  at,
  ExportWalk,
  entryPoints,
  entryProgram,
  fixture,
  hidden,
  inProject,
  isTypeDeclaration,
  ROOT,
} from './public-surface.js';

/**
 * ARCHITECTURE.md rule 12 and "no `any` at boundaries", checked with the compiler API over the
 * source of every entry point package.json exports: each export, followed through re-exports,
 * and each public member of the interfaces, classes and type literals it declares or its
 * signatures name (inherited docs count, as editors show them) has a doc comment, and no public
 * signature holds `any`, written or inferred.
 */
/** Exports and members not documented yet, by name: this list may only shrink. */
const PENDING: ReadonlySet<string> = new Set(
  JSON.parse(readFileSync(new URL('public-docs-pending.json', import.meta.url), 'utf8')),
);

/** One export or public member: `Worker.stop`, `WorkerOptions.backoff.baseMs`. */
interface Item {
  name: string;
  at: string;
  documented: boolean;
}

interface Surface {
  items: Item[];
  /** Where a public signature holds `any`, and the member it is in. */
  anys: string[];
}

/** The public surface of `entries` in `program`: exports, members, and the types they name. */
function publicSurface(program: ts.Program, entries: string[], root: string): Surface {
  const checker = program.getTypeChecker();
  const items = new Map<string, Item>();
  const anys: string[] = [];
  const walk = new ExportWalk(program, entries);
  const symbolOf = (node: ts.Node): ts.Symbol | undefined => {
    const name = (node as { name?: ts.Node }).name;
    return (
      (name !== undefined ? checker.getSymbolAtLocation(name) : undefined) ??
      (node as { symbol?: ts.Symbol }).symbol
    );
  };

  /** `any` in a type node, or in the type the compiler infers where none is written. */
  function checkAny(node: ts.Node, written: ts.Node | undefined, name: string) {
    let inferred: ts.Node | undefined;
    if (written === undefined) {
      const flags = ts.NodeBuilderFlags.NoTruncation | ts.NodeBuilderFlags.IgnoreErrors;
      if (ts.isFunctionLike(node)) {
        const signature = checker.getSignatureFromDeclaration(node);
        if (signature !== undefined) {
          const returned = checker.getReturnTypeOfSignature(signature);
          inferred = checker.typeToTypeNode(returned, node, flags);
        }
      } else {
        const symbol = symbolOf(node);
        if (symbol !== undefined) {
          const type = checker.getTypeOfSymbolAtLocation(symbol, node);
          inferred = checker.typeToTypeNode(type, node, flags);
        }
      }
    }
    const visit = (child: ts.Node): boolean =>
      child.kind === ts.SyntaxKind.AnyKeyword ||
      (!ts.isTypeLiteralNode(child) && (ts.forEachChild(child, visit) ?? false));
    const own = written ?? inferred;
    if (own !== undefined && visit(own)) {
      anys.push(`${name} (${at(node, root)})${written === undefined ? ', inferred' : ''}`);
    }
  }

  function add(node: ts.Node, name: string) {
    if (items.has(name)) return; // overloads: the symbol's doc is that of all of them
    const symbol = symbolOf(node);
    const doc = symbol === undefined ? [] : symbol.getDocumentationComment(checker);
    items.set(name, {
      name,
      at: at(node, root),
      documented: ts.displayPartsToString(doc).trim() !== '',
    });
  }

  /** Queues the project's types a type node names, and walks its type literals' members. */
  function typeNode(node: ts.Node | undefined, owner: string) {
    if (node === undefined) return;
    const visit = (child: ts.Node) => {
      if (ts.isTypeReferenceNode(child) || ts.isExpressionWithTypeArguments(child)) {
        const target = ts.isTypeReferenceNode(child) ? child.typeName : child.expression;
        let symbol = checker.getSymbolAtLocation(target);
        if (symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias) {
          symbol = checker.getAliasedSymbol(symbol);
        }
        for (const declaration of symbol?.declarations ?? []) {
          if (inProject(declaration, root) && isTypeDeclaration(declaration)) {
            walk.queue(declaration, symbol?.name ?? owner);
          }
        }
      }
      if (ts.isTypeLiteralNode(child)) {
        for (const m of child.members) member(m, owner);
        return;
      }
      ts.forEachChild(child, visit);
    };
    visit(node);
  }

  function signature(node: ts.SignatureDeclarationBase, owner: string) {
    for (const parameter of node.parameters) {
      typeNode(parameter.type, owner);
      checkAny(parameter, parameter.type, `${owner}(${parameter.name.getText()})`);
    }
    for (const parameter of node.typeParameters ?? []) {
      typeNode(parameter.constraint, owner);
      typeNode(parameter.default, owner);
      if (parameter.constraint) checkAny(parameter, parameter.constraint, owner);
      if (parameter.default) checkAny(parameter, parameter.default, owner);
    }
    typeNode(node.type, owner);
    if (!ts.isConstructorDeclaration(node) && !ts.isSetAccessorDeclaration(node)) {
      checkAny(node, node.type, owner);
    }
  }

  function member(node: ts.Node, owner: string) {
    if (ts.isConstructorDeclaration(node)) {
      for (const parameter of node.parameters) {
        if (ts.isParameterPropertyDeclaration(parameter, node) && !hidden(parameter)) {
          const name = `${owner}.${parameter.name.getText()}`;
          add(parameter, name);
          typeNode(parameter.type, name);
          checkAny(parameter, parameter.type, name);
        }
      }
      if (!hidden(node)) signature(node, `${owner}(constructor)`);
      return;
    }
    if (hidden(node) || ts.isClassStaticBlockDeclaration(node)) return;
    if (
      ts.isIndexSignatureDeclaration(node) ||
      ts.isCallSignatureDeclaration(node) ||
      ts.isConstructSignatureDeclaration(node)
    ) {
      signature(node, owner);
      return;
    }
    const key = (node as { name?: ts.Node }).name;
    if (key === undefined) return;
    const name = `${owner}.${ts.isIdentifier(key) || ts.isStringLiteral(key) ? key.text : key.getText()}`;
    add(node, name);
    if (ts.isFunctionLike(node)) {
      signature(node, name);
    } else {
      const type = (node as { type?: ts.TypeNode }).type;
      typeNode(type, name);
      checkAny(node, type, name);
    }
  }

  function declaration(node: ts.Node, name: string) {
    add(node, name);
    if (ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) {
      for (const clause of node.heritageClauses ?? []) typeNode(clause, name);
      for (const parameter of node.typeParameters ?? []) typeNode(parameter, name);
      for (const m of node.members) member(m, name);
    } else if (ts.isTypeAliasDeclaration(node)) {
      typeNode(node.type, name);
      checkAny(node, node.type, name);
    } else if (ts.isEnumDeclaration(node)) {
      for (const m of node.members) add(m, `${name}.${m.name.getText()}`);
    } else if (ts.isFunctionDeclaration(node)) {
      signature(node, name);
    } else if (ts.isVariableDeclaration(node)) {
      typeNode(node.type, name);
      checkAny(node, node.type, name);
      let value = node.initializer;
      while (value !== undefined && (ts.isAsExpression(value) || ts.isSatisfiesExpression(value))) {
        value = value.expression;
      }
      // An object without a written type: its members are public as its inferred type shows them.
      if (node.type === undefined && value !== undefined && ts.isObjectLiteralExpression(value)) {
        for (const m of value.properties) member(m, name);
      }
    }
  }

  walk.run(declaration);
  return { items: [...items.values()], anys };
}

describe('the public API has a doc comment on every export and member, and no any', () => {
  let surface: Surface;

  beforeAll(() => {
    const { program, entries } = entryProgram();
    surface = publicSurface(program, entries, ROOT);
  }, 30_000);

  it('walks every entry point package.json exports', () => {
    expect(entryPoints().map((file) => relative(ROOT, file))).toEqual([
      'src/index.ts',
      'src/testing/index.ts',
      'src/server/index.ts',
    ]);
    expect(surface.items.map((item) => item.name)).toEqual(
      expect.arrayContaining(['open', 'WorkerOptions.wait', 'Harness.advance', 'startServer']),
    );
  });

  it('every public export and member has a doc comment, but those still listed as pending', () => {
    const undocumented = surface.items.filter((item) => !item.documented);
    const names = new Set(undocumented.map((item) => item.name));
    expect(
      undocumented.filter((item) => !PENDING.has(item.name)).map((i) => `${i.name} (${i.at})`),
    ).toEqual([]);
    // The list only shrinks: an entry documented since (or gone) must leave it.
    expect([...PENDING].filter((name) => !names.has(name))).toEqual([]);
  });

  it('no public signature holds any, written or inferred', () => {
    expect(surface.anys).toEqual([]);
  });

  it('the check finds a missing doc comment and an any, written or inferred', () => {
    const { program, entry, root } = fixture(
      '.public-docs-fixture',
      `
      /** Documented. */
      export interface Options {
        /** Documented, in ms. */
        waitMs?: number;
        bare?: number;
        loose?: any;
        nested?: { inner: string };
      }
      /** Documented. */
      export function parse(text: string) { return JSON.parse(text); }
      export const plain = 1;
    `,
    );
    const found = publicSurface(program, [entry], root);
    expect(found.items.filter((item) => !item.documented).map((item) => item.name)).toEqual([
      'Options.bare',
      'Options.loose',
      'Options.nested',
      'Options.nested.inner',
      'plain',
    ]);
    expect(found.anys.sort()).toEqual([
      'Options.loose (index.ts:7)',
      'parse (index.ts:11), inferred',
    ]);
  });
});
