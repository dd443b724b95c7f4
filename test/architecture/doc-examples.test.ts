import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The code blocks of the docs (```ts, ```js …) and examples/*.ts compile as a user's code does:
 * `leaseq`, `leaseq/testing` and `leaseq/server` resolve through package.json's exports to the
 * built dist/ types (the package imports itself by name), under this repository's compiler
 * options, in one program. Blocks that are not code carry another info string (```text, ```sh).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGES = ['README.md', ...readdirSync(resolve(ROOT, 'docs')).map((name) => `docs/${name}`)]
  .filter((page) => page.endsWith('.md'))
  .sort();
const EXAMPLES = readdirSync(resolve(ROOT, 'examples'))
  .filter((name) => name.endsWith('.ts'))
  .map((name) => `examples/${name}`);
/** Info strings of code, and the extension each block is checked under (JavaScript: checkJs). */
const CODE: Record<string, string> = {
  ts: '.ts',
  typescript: '.ts',
  mts: '.ts',
  js: '.mjs',
  javascript: '.mjs',
  mjs: '.mjs',
};
/** The blocks' files, made up by the compiler host inside the package: its name resolves there. */
const BLOCKS_DIR = resolve(ROOT, '.doc-examples');

/**
 * A page's fragments use what an earlier block of the page made, or a function of the reader's
 * own: here each such name, declared for every block of the page that uses it without
 * declaring it. Declarations go after the block, so the block's lines keep their numbers.
 * A preamble only declares: what a block takes from the package or another module it imports
 * itself, so that it compiles when copied verbatim.
 */
const PREAMBLES: Record<string, Record<string, string>> = {
  'README.md': {
    broker: "declare const broker: import('leaseq').Broker;",
    emails: "declare const emails: import('leaseq').Queue;",
    // The reader's mail call.
    send: 'declare function send(payload: unknown, options: { signal: AbortSignal }): Promise<void>;',
  },
  'docs/engines.md': {
    broker: "declare const broker: import('leaseq').Broker;",
    job: "declare const job: import('leaseq').Delivery;",
    account: 'declare const account: string;',
    cents: 'declare const cents: number;',
  },
  'docs/sqs.md': {
    // The reader's message handler.
    handle: 'declare function handle(body: unknown): Promise<void>;',
  },
  'docs/worker.md': {
    broker: "declare const broker: import('leaseq').Broker;",
    payments: "declare const payments: import('leaseq').Queue;",
  },
};

interface Block {
  page: string;
  /** Line of the opening fence, from 1. */
  line: number;
  info: string;
  text: string;
}

/** The fenced blocks of a page, in order. */
function blocksOf(page: string): Block[] {
  const lines = readFileSync(resolve(ROOT, page), 'utf8').split('\n');
  const blocks: Block[] = [];
  let open: { fence: string; info: string; line: number } | undefined;
  lines.forEach((text, index) => {
    const match = /^(`{3,}|~{3,})\s*(.*)$/.exec(text);
    if (match === null) return;
    const [, fence = '', info = ''] = match;
    if (open === undefined) open = { fence, info: info.trim(), line: index + 1 };
    else if (fence.startsWith(open.fence) && info.trim() === '') {
      const body = lines.slice(open.line, index).join('\n');
      blocks.push({ page, line: open.line, info: open.info, text: `${body}\n` });
      open = undefined;
    }
  });
  if (open !== undefined) throw new Error(`${page}:${open.line}: a block is never closed`);
  return blocks;
}

/** The names a block declares at its top level, and every identifier it uses. */
function namesOf(text: string): { declared: Set<string>; used: Set<string> } {
  const file = ts.createSourceFile('block.ts', text, ts.ScriptTarget.Latest, true);
  const declared = new Set<string>();
  const bind = (name: ts.BindingName): void => {
    if (ts.isIdentifier(name)) declared.add(name.text);
    else for (const element of name.elements) if ('name' in element) bind(element.name);
  };
  for (const statement of file.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.name) declared.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) declared.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings))
        for (const element of bindings.elements) declared.add(element.name.text);
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) bind(declaration.name);
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement)) &&
      statement.name
    ) {
      declared.add(statement.name.text);
    }
  }
  const used = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node)) used.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return { declared, used };
}

/** Where a block's file came from: its page, the line of its fence, its length in lines. */
interface Source {
  page: string;
  fence: number;
  /** Lines of the block itself; the lines after them are its preamble. */
  lines: number;
}

/** Every code block as a file of its own, with the declarations of its page it needs. */
function blockFiles(blocks: readonly Block[]) {
  const files = new Map<string, string>();
  const sources = new Map<string, Source>();
  const preambleUses = new Set<string>();
  for (const block of blocks) {
    const { declared, used } = namesOf(block.text);
    const preamble = Object.entries(PREAMBLES[block.page] ?? {})
      .filter(([name]) => used.has(name) && !declared.has(name))
      .map(([name, declaration]) => {
        preambleUses.add(`${block.page} ${name}`);
        return declaration;
      });
    const name = `${block.page.replace(/[/.]/g, '-')}-${block.line}${CODE[block.info]}`;
    const path = resolve(BLOCKS_DIR, name);
    files.set(path, `${block.text}${preamble.join('\n')}\n`);
    sources.set(path, {
      page: block.page,
      fence: block.line,
      lines: block.text.split('\n').length - 1,
    });
  }
  return { files, sources, preambleUses };
}

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (name) => name,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => '\n',
};

/** This repository's compiler options, without the paths that point its own code at src/. */
function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(resolve(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const { options, errors } = ts.convertCompilerOptionsFromJson(
    config.config.compilerOptions,
    ROOT,
  );
  if (errors.length > 0) throw new Error(ts.formatDiagnostics(errors, formatHost));
  const { paths: _paths, ...rest } = options;
  return { ...rest, noEmit: true, allowJs: true, checkJs: true };
}

/** One line per diagnostic, naming the line of the page (`docs/worker.md:320`) or of the file. */
function describeDiagnostic(diagnostic: ts.Diagnostic, sources: Map<string, Source>): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  const file = diagnostic.file;
  if (file === undefined || diagnostic.start === undefined) return message;
  const { line } = file.getLineAndCharacterOfPosition(diagnostic.start);
  const source = sources.get(file.fileName);
  if (source === undefined) return `${file.fileName.replace(ROOT, '')}:${line + 1}: ${message}`;
  const block = `${source.page}:${source.fence}`;
  return line < source.lines
    ? `${source.page}:${source.fence + line + 1} (the block at ${block}): ${message}`
    : `${block} (the block's preamble): ${message}`;
}

const blocks = PAGES.flatMap(blocksOf);
const codeBlocks = blocks.filter((block) => block.info in CODE);

beforeAll(() => {
  if (!existsSync(resolve(ROOT, 'dist/index.d.ts'))) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
});

describe('the code blocks of the docs and the examples', () => {
  it('every block that uses the package is marked as code', () => {
    expect(codeBlocks.length).toBeGreaterThanOrEqual(10);
    const unmarked = blocks.filter(
      (block) => !(block.info in CODE) && /\bfrom ['"]leaseq|\bawait open\(/.test(block.text),
    );
    expect(unmarked.map((block) => `${block.page}:${block.line} (${block.info})`)).toEqual([]);
  });

  it('compile against the built types of the package, as a user imports them', () => {
    const { files, sources, preambleUses } = blockFiles(codeBlocks);
    const options = compilerOptions();
    const host = ts.createCompilerHost(options);
    const { fileExists, readFile, getSourceFile } = host;
    host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
    host.readFile = (name) => files.get(name) ?? readFile.call(host, name);
    host.getSourceFile = (name, language, ...rest) => {
      const text = files.get(name);
      return text === undefined
        ? getSourceFile.call(host, name, language, ...rest)
        : ts.createSourceFile(name, text, language);
    };
    const roots = [...files.keys(), ...EXAMPLES.map((example) => resolve(ROOT, example))];
    const program = ts.createProgram({ rootNames: roots, options, host });

    const loaded = program.getSourceFiles().map((file) => file.fileName);
    expect(loaded).toContain(resolve(ROOT, 'dist/index.d.ts'));
    expect(loaded.filter((name) => name.startsWith(`${resolve(ROOT, 'src')}/`))).toEqual([]);

    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((diagnostic) => describeDiagnostic(diagnostic, sources));
    expect(problems).toEqual([]);

    // Each name of a preamble is still used by a block of its page.
    const stale = Object.entries(PREAMBLES).flatMap(([page, names]) =>
      Object.keys(names)
        .map((name) => `${page} ${name}`)
        .filter((use) => !preambleUses.has(use)),
    );
    expect(stale).toEqual([]);

    // A preamble never stands in for an import: none declares a name a module the blocks import
    // exports (`work`, vitest's `it`), so a block that uses one without importing it fails.
    const checker = program.getTypeChecker();
    const imported = new Set<string>();
    for (const path of files.keys()) {
      for (const statement of program.getSourceFile(path)?.statements ?? []) {
        if (!ts.isImportDeclaration(statement)) continue;
        const module = checker.getSymbolAtLocation(statement.moduleSpecifier);
        for (const symbol of module ? checker.getExportsOfModule(module) : [])
          imported.add(symbol.name);
      }
    }
    expect(imported).toContain('work');
    expect(imported).toContain('it');
    const standIns = Object.entries(PREAMBLES).flatMap(([page, names]) =>
      Object.entries(names)
        .filter(
          ([name, declaration]) =>
            imported.has(name) ||
            ts
              .createSourceFile('preamble.ts', declaration, ts.ScriptTarget.Latest)
              .statements.some(
                (statement) =>
                  ts.isImportDeclaration(statement) || ts.isImportEqualsDeclaration(statement),
              ),
        )
        .map(([name]) => `${page} ${name}`),
    );
    expect(standIns).toEqual([]);
  });
});
