// The console's first owner page, interactive within 300 ms of navigation on
// a warm node, and its files at most 200 KiB compressed (issue budget).
// Not a test (timings are not asserted anywhere): scripts/bench runs it.
//
//   node console/tests/interactive.bench.mjs [--loads N] [--page ID]
//
// Starts a node, warms it (the API and the console's files, fetched once
// each), signs an owner in, then reloads the first owner page (the first link
// of the navigation, or --page) N times (default 20), reading each load's
// `voxos:interactive` mark: set by the shell once the page's first data is on
// screen, its startTime in ms since the navigation began. Prints p50/p99 and
// "met" or "MISSED" against 300 ms, and the sum of the .gz files the node
// sends, against 200 KiB.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { openPage, paths, signIn, startBrowser, startNode } from './harness.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 && args[at + 1] ? args[at + 1] : fallback;
};
const loads = Number(option('--loads', '20'));
const budgetMs = 300;
const budgetBytes = 200 * 1024;

function gzipped(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += gzipped(path);
    else if (entry.name.endsWith('.gz')) total += statSync(path).size;
  }
  return total;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

// (the node logs only errors: the bench prints its own lines)
const node = await startNode({ log_level: 'error' });
const browser = await startBrowser();
try {
  const owner = await node.tenant('Bench team');
  // Warm the node: the tenant's actor, the API routes the pages use, the files.
  for (const path of ['/v1/whoami', '/v1/agents', '/v1/servers', '/v1/audit?limit=100']) await node.call(owner.token, 'GET', path);
  const page = await openPage(browser);
  await signIn(page, node.base, owner.token);
  const first = option('--page', (await page.getAttribute('nav a', 'href')).replace(/^#\//, ''));
  await page.goto(`${node.base}/#/${first}`);
  const times = [];
  try {
    await page.waitForSelector('body[data-ready="1"]', { timeout: 10_000 });
    for (let i = 0; i < loads; i++) {
      await page.reload();
      await page.waitForSelector('body[data-ready="1"]', { timeout: 10_000 });
      times.push(await page.evaluate(() => performance.getEntriesByName('voxos:interactive')[0].startTime));
    }
  } catch (failure) {
    console.log(`console: first owner page (#/${first}) never became interactive (budget ${budgetMs} ms: MISSED): ` +
      `${failure.message.split('\n')[0]}; ${page.problems.join('; ')}`);
  }
  times.sort((a, b) => a - b);
  const p50 = percentile(times, 50);
  const p99 = percentile(times, 99);
  if (times.length) console.log(
    `console: first owner page (#/${first}) interactive after navigation, ${loads} loads on a warm node: ` +
      `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${times.at(-1).toFixed(1)} ms ` +
      `(budget ${budgetMs} ms at p99: ${p99 <= budgetMs ? 'met' : 'MISSED'})`,
  );
  const bytes = gzipped(paths.consoleDir);
  console.log(
    `console: files as sent, gzip: ${(bytes / 1024).toFixed(1)} KiB ` +
      `(budget ${budgetBytes / 1024} KiB: ${bytes <= budgetBytes ? 'met' : 'MISSED'})`,
  );
  if (process.env.VOXOS_BENCH_VERBOSE) console.log(`console: each load (ms): ${times.map((t) => t.toFixed(1)).join(' ')}`);
} finally {
  await browser.close();
  node.stop();
}
process.exit();
