// Bundles the dashboard (src/server/ui/web) into dist/server/ui/public: one script, one style
// sheet, the page and its icon. No CDN: everything it loads is served by leaseq itself.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const from = 'src/server/ui/web';
const to = 'dist/server/ui/public';
rmSync(to, { recursive: true, force: true });
mkdirSync(to, { recursive: true });
await build({
  entryPoints: { app: `${from}/main.tsx` },
  outdir: to,
  bundle: true,
  format: 'esm',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  minify: true,
  legalComments: 'none',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: `${from}/tsconfig.json`,
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(`${from}/${file}`, `${to}/${file}`);
