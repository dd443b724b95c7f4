// Copies what tsc does not: the SQL migrations, next to the compiled engines.
import { cpSync, readdirSync } from 'node:fs';

for (const engine of ['sqlite', 'postgres']) {
  const from = `src/engine/${engine}/migrations`;
  for (const file of readdirSync(from)) {
    if (file.endsWith('.sql'))
      cpSync(`${from}/${file}`, `dist/engine/${engine}/migrations/${file}`);
  }
}
