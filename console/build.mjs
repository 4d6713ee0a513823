// Builds the web console into a folder the node serves (http.console_dir):
//   node console/build.mjs --out build/bin/console
// No bundler: the sources are ES modules as written (src/), beside the
// vendored modules they import (vendor/: preact, its hooks, htm, uPlot, as
// package-lock.json pins them, with their bare "preact" import made
// relative). Every file gets a gzip -9 twin the node sends to browsers that
// accept gzip. Fails when the files, as sent compressed, pass the budget.
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
if (outAt < 0 || !args[outAt + 1]) {
  console.error('usage: node console/build.mjs --out DIR');
  process.exit(2);
}
const out = args[outAt + 1];
/** The console's files as sent, compressed, at most (issue budget: 200 KiB). */
const budgetBytes = 200 * 1024;

const modules = join(here, 'node_modules');
try {
  statSync(join(modules, 'preact'));
} catch {
  console.error('console: node_modules missing; run scripts/setup (npm ci in console/)');
  process.exit(1);
}

// Source maps and their comments stay out: the node serves what runs.
const stripMap = (text) => text.replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n');
const vendor = {
  'vendor/preact.js': stripMap(readFileSync(join(modules, 'preact/dist/preact.mjs'), 'utf8')),
  'vendor/hooks.js': stripMap(
    readFileSync(join(modules, 'preact/hooks/dist/hooks.mjs'), 'utf8').replace(
      /from\s*"preact"/g,
      'from"./preact.js"',
    ),
  ),
  'vendor/htm.js': stripMap(readFileSync(join(modules, 'htm/dist/htm.mjs'), 'utf8')),
  'vendor/uplot.js': stripMap(readFileSync(join(modules, 'uplot/dist/uPlot.esm.js'), 'utf8')),
  'vendor/uplot.css': readFileSync(join(modules, 'uplot/dist/uPlot.min.css'), 'utf8'),
};

function sources(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sources(path));
    else found.push(path);
  }
  return found;
}

rmSync(out, { recursive: true, force: true });
const files = { ...vendor };
const src = join(here, 'src');
for (const path of sources(src)) files[relative(src, path)] = readFileSync(path);

let plain = 0;
let compressed = 0;
for (const [name, body] of Object.entries(files)) {
  const target = join(out, name);
  mkdirSync(dirname(target), { recursive: true });
  const bytes = Buffer.from(body);
  const gz = gzipSync(bytes, { level: 9 });
  writeFileSync(target, bytes);
  writeFileSync(`${target}.gz`, gz);
  plain += bytes.length;
  compressed += gz.length;
}
const kib = (n) => (n / 1024).toFixed(1);
console.log(
  `console: ${Object.keys(files).length} files, ${kib(plain)} KiB, ${kib(compressed)} KiB gzip ` +
    `(budget ${kib(budgetBytes)} KiB) -> ${out}`,
);
if (compressed > budgetBytes) {
  console.error(`console: ${kib(compressed)} KiB compressed passes the ${kib(budgetBytes)} KiB budget`);
  process.exit(1);
}
