// The owner's pages in a real browser against a real node and SDK-built MCP
// peers: a new owner adds a custom server at a registered loopback URL,
// tests it, allows two tools, enables and trusts it, grants one to the
// default agent, pins the web.search route (the SDK peer implements no
// routed action: a custom server has no preset identity, so the route's
// candidates are the tenant's Exa server), starts a run from the example
// host and watches its wave on the Runs page. Failures are shown in words:
// the URL policy's refusal, a failed connection test. Another tenant's
// token sees none of it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { openPage, shot, signIn, sourceDir, startBrowser, startNode, startPeer } from './harness.mjs';

let node;
let browser;
let peer;
let stoppedPeer;
let owner;
let other;
let ownerRunId;

before(async () => {
  peer = await startPeer('sdk_peer.mjs', ['--json']);
  stoppedPeer = await startPeer('sdk_peer.mjs', ['--json']);
  node = await startNode({
    registered_urls: [
      { url: peer.url, purpose: 'mcp' },
      { url: stoppedPeer.url, purpose: 'mcp' },
    ],
  });
  owner = await node.tenant('Owner team');
  other = await node.tenant('Other team');
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  node?.stop();
  peer?.stop();
  stoppedPeer?.stop();
});

/** Problems other than the failed requests a test provoked on purpose. */
const unexpected = (page) => page.problems.filter((p) => !/Failed to load resource/.test(p));

/** A fresh page signed in with `token`, on the page named `nav` (MCP, Tools, Runs). */
async function signedIn(token, nav) {
  const page = await openPage(browser);
  await signIn(page, node.base, token);
  if (nav) await page.click(`nav a:text("${nav}")`);
  return page;
}

/** Asserts the page had no unexpected problem and closes it. */
async function done(page) {
  assert.deepEqual(unexpected(page), []);
  await page.context().close();
}

const card = (page, label) => page.locator('[data-testid=server]', { has: page.locator(`[data-testid=server-label]:text-is("${label}")`) });

/** Waits until `locator`'s text matches `pattern`; answers the text. */
async function textMatching(locator, pattern, timeout = 15_000) {
  const deadline = Date.now() + timeout;
  let text = '';
  while (Date.now() < deadline) {
    text = (await locator.textContent({ timeout })) || '';
    if (pattern.test(text)) return text;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`text ${JSON.stringify(text)} never matched ${pattern}`);
}

/** Runs the example host's forecast; answers { exit, stdout } when it ends. */
function runHost(agentId, thinkMs) {
  const child = spawn(process.execPath, [join(sourceDir, 'examples/http_host/host.mjs'), 'forecast',
    '--url', node.base, '--agent', agentId, '--think-ms', String(thinkMs)], {
    env: { ...process.env, VOXOS_TOKEN: owner.token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stdout += chunk));
  return new Promise((resolve) => child.on('exit', (exit) => resolve({ exit, stdout })));
}

test('a new owner adds, tests, allows, enables and grants a custom server, pins a route and watches a run’s wave', async () => {
  const page = await signedIn(owner.token, 'MCP');
  await page.waitForSelector('[data-testid=mcp-page]');

  // The custom server form, at the registered loopback URL.
  await page.fill('#custom-url', peer.url);
  await page.fill('#custom-label', 'Weather peer');
  await page.click('[data-testid=custom-form] button[type=submit]');
  const server = card(page, 'Weather peer');
  await server.waitFor();
  assert.equal(await server.locator('[data-testid=connected]').textContent(), 'Not connected');
  assert.match(await server.textContent(), /Not tested yet|No tools discovered yet/);

  // The connection test discovers the peer's tools, read-only marks included.
  await server.locator('button:text-is("Test connection")').click();
  assert.match(await textMatching(server.locator('[data-testid=test-result]'), /Connected/), /Connected: \d+ tools discovered/);
  const forecastRow = server.locator('[data-testid=discovered-tools] tr[data-tool="get_forecast"]');
  await forecastRow.waitFor();
  assert.equal(await forecastRow.locator('[data-testid=read-only]').textContent(), 'read-only');
  assert.match(await forecastRow.locator('[data-testid=tool-description]').textContent(), /Weather forecast/);
  assert.match(await server.locator('tr[data-tool="place_order"]').textContent(), /changes things/);
  await shot(page, 'owner-mcp-tested');

  // Two tools allowed, then enabled (which needs a new test) and trusted.
  for (const tool of ['get_forecast', 'echo']) {
    const box = server.getByLabel(`Allow ${tool}`, { exact: true });
    await box.check();
    await page.waitForFunction((name) => {
      const input = document.querySelector(`[data-testid=server] input[aria-label="Allow ${name}"]`);
      return input && input.checked && !input.disabled;
    }, tool);
  }
  await server.getByLabel('Enabled').check();
  await textMatching(server, /need a passing connection test/);
  await server.getByLabel('Trusted').check();
  await server.locator('button:text-is("Test connection")').click();
  await textMatching(server.locator('[data-testid=connected]'), /^Connected$/);

  // One of them granted to the default agent, from the server's card.
  const grantRow = server.locator('[data-testid=server-grants] tr[data-tool="get_forecast"]');
  await grantRow.waitFor();
  assert.equal(await grantRow.getAttribute('data-agent'), 'Default');
  assert.match(await grantRow.locator('[data-testid=effective]').textContent(), /Not allowed — not granted/);
  await grantRow.locator('select[data-testid=grant]').selectOption('allow');
  assert.match(await textMatching(grantRow.locator('[data-testid=effective]'), /^Allowed/), /Allowed — allowed: granted to this agent/);
  assert.match(await server.locator('[data-testid=server-grants] tr[data-tool="echo"] [data-testid=effective]').textContent(), /Not allowed/);
  await shot(page, 'owner-mcp-granted');

  // What the node stored is what the page shows.
  const [record] = (await node.call(owner.token, 'GET', '/v1/servers')).body.filter((s) => s.label === 'Weather peer');
  assert.deepEqual([...record.allowed_tools].sort(), ['echo', 'get_forecast']);
  assert.equal(record.enabled, true);
  assert.equal(record.trusted, true);
  assert.equal(record.connected, true);
  const agents = (await node.call(owner.token, 'GET', '/v1/agents')).body;
  const agentId = agents.find((a) => a.is_default).agent_id;
  const grants = (await node.call(owner.token, 'GET', `/v1/agents/${agentId}/grants`)).body;
  const granted = grants.filter((r) => r.server_id === record.server_id && r.decision === 'allow').map((r) => r.tool);
  assert.deepEqual(granted, ['get_forecast']);

  // Tools: internal tools with kind and risk; the server's tools; the route.
  await page.click('nav a:text("Tools")');
  await page.waitForSelector('[data-testid=tools-page] [data-testid=internal-tools]');
  const clock = page.locator('[data-testid=internal-tools] tr[data-tool="get_current_time"]');
  assert.match(await clock.textContent(), /Read-only, current time/);
  assert.match(await clock.textContent(), /low/);
  assert.match(await clock.locator('[data-testid=effective]').textContent(), /Allowed — allowed by default/);
  const serverTools = page.locator('[data-testid=server-tools]', { hasText: 'MCP server: Weather peer' });
  assert.match(await serverTools.locator('tr[data-tool="get_forecast"] [data-testid=effective]').textContent(), /^Allowed/);
  const route = page.locator('[data-testid=route][data-action="web.search"]');
  await route.waitFor();
  assert.equal(await route.locator('[data-testid=route-mode]').textContent(), 'Automatic');
  assert.match(await route.locator('[data-testid=route-resolved]').textContent(), /web_search_exa on Exa web search — chosen automatically/);
  await route.locator('[data-testid=candidate]', { hasText: 'web_search_exa' }).locator('button:text-is("Pin this")').click();
  await textMatching(route.locator('[data-testid=route-mode]'), /^Pinned$/);
  assert.match(await route.locator('[data-testid=route-resolved]').textContent(), /web_search_exa on Exa web search — pinned by you/);
  const routes = (await node.call(owner.token, 'GET', `/v1/agents/${agentId}/routes`)).body.routes;
  assert.equal(routes.find((r) => r.action === 'web.search').mode, 'pinned');
  await shot(page, 'owner-tools-pinned');
  await route.locator('button:text-is("Back to automatic")').click();
  await textMatching(route.locator('[data-testid=route-mode]'), /^Automatic$/);
  await route.locator('[data-testid=candidate]', { hasText: 'web_search_exa' }).locator('button:text-is("Pin this")').click();
  await textMatching(route.locator('[data-testid=route-mode]'), /^Pinned$/);

  // Runs: the example host starts a run; the page finds it live and follows its wave.
  await page.click('nav a:text("Runs")');
  await page.waitForSelector('[data-testid=runs-page]');
  const hostDone = runHost(agentId, 5000);
  const liveRow = page.locator('[data-testid=run-list] tr', { has: page.locator('[data-testid=run-state]:text-is("Live")') });
  await liveRow.waitFor({ timeout: 10_000 });
  ownerRunId = await liveRow.getAttribute('data-run');
  await liveRow.locator('a').click();
  await textMatching(page.locator('[data-testid=stream-state]'), /Following this run live/);
  const round = page.locator('[data-testid=round][data-round="1"]');
  await round.waitFor({ timeout: 15_000 });
  await textMatching(round.locator('h4'), /answered/);
  assert.match(await round.locator('h4').textContent(), /Round 1 · 1 wave · answered/);
  const statuses = await round.locator('[data-testid=call-status]').allTextContents();
  assert.deepEqual(statuses, Array(7).fill('ok'));
  const cells = await round.locator('tr[data-call] td:nth-child(5)').allTextContents();
  for (const cell of cells) assert.match(cell, /^\d+(\.\d+)? (µs|ms|s)$/);
  assert.deepEqual(await round.locator('tr[data-call] td:nth-child(2)').allTextContents(), Array(7).fill('get_forecast'));
  assert.match(await page.locator('[data-testid=snapshot]').textContent(), /get_forecast/);
  assert.equal(await page.locator('[data-testid=snapshot-route]').textContent(), 'web.search: pinned, served by web_search_exa');
  await shot(page, 'owner-runs-wave');
  const host = await hostDone;
  assert.equal(host.exit, 0, host.stdout);
  assert.match(host.stdout, new RegExp(`run ${ownerRunId} `));
  await textMatching(page.locator('[data-testid=stream-state]'), /^The run ended\.$/);
  await textMatching(page.locator(`[data-testid=run-list] tr[data-run="${ownerRunId}"] [data-testid=run-state]`), /^Finished/);
  await textMatching(page.locator('[data-testid=recorded]'), /get_forecast/);
  await shot(page, 'owner-runs-finished');
  assert.deepEqual(page.problems, []);
  await done(page);
});

test('an ended run opened later shows what the node recorded and says why there is no live activity', async () => {
  const page = await signedIn(owner.token);
  await page.goto(`${node.base}/#/runs/${ownerRunId}`);
  await textMatching(page.locator('[data-testid=stream-state]'), /no longer live/);
  await textMatching(page.locator('[data-testid=recorded]'), /get_forecast/);
  assert.equal(await page.locator('[data-testid=round]').count(), 0);
  assert.match(await page.locator('[data-testid=snapshot]').textContent(), /get_forecast/);
  await done(page);
});

test('an unregistered loopback URL is refused by the URL policy, in words, and nothing is added', async () => {
  const page = await signedIn(owner.token, 'MCP');
  await page.waitForSelector('[data-testid=mcp-page]');
  const before = (await node.call(owner.token, 'GET', '/v1/servers')).body.length;
  await page.fill('#custom-url', `http://127.0.0.1:${peer.port}/unregistered`);
  await page.fill('#custom-label', 'Not registered');
  await page.click('[data-testid=custom-form] button[type=submit]');
  const error = await textMatching(page.locator('[data-testid=custom-form] [data-testid=error]'), /URL policy/);
  assert.match(error, /URL policy refused this address/);
  assert.match(error, /register this exact URL for MCP/);
  assert.doesNotMatch(error, /\b403\b/);
  await shot(page, 'owner-mcp-url-refused');
  assert.equal((await node.call(owner.token, 'GET', '/v1/servers')).body.length, before);
  assert.equal(await card(page, 'Not registered').count(), 0);
  await done(page);
});

test('a connection test of a server that stopped fails in words and marks it not connected', async () => {
  const created = await node.call(owner.token, 'POST', '/v1/servers', { url: stoppedPeer.url, label: 'Stopped peer' });
  assert.equal(created.status, 201);
  assert.equal((await node.call(owner.token, 'POST', `/v1/servers/${created.body.server_id}/test`)).status, 200);
  stoppedPeer.stop();
  const page = await signedIn(owner.token, 'MCP');
  const server = card(page, 'Stopped peer');
  await server.waitFor();
  await server.locator('button:text-is("Test connection")').click();
  const error = await textMatching(server.locator('[data-testid=error]'), /connection test failed/);
  assert.match(error, /The connection test failed\. Could not reach it/);
  assert.doesNotMatch(error, /\b50\d\b/);
  await textMatching(server.locator('[data-testid=connected]'), /^Not connected$/);
  await textMatching(server.locator('[data-testid=last-test]'), /Last test failed/);
  await shot(page, 'owner-mcp-test-failed');
  await done(page);
});

test('another tenant’s token sees none of this tenant’s servers or runs', async () => {
  const page = await signedIn(other.token, 'MCP');
  await page.waitForSelector('[data-testid=server]');
  const labels = await page.locator('[data-testid=server-label]').allTextContents();
  assert.deepEqual(labels, ['Exa web search']);
  await page.click('nav a:text("Runs")');
  await page.waitForSelector('[data-testid=no-runs]');
  await page.goto(`${node.base}/#/runs/${ownerRunId}`);
  const error = await textMatching(page.locator('[data-testid=run-detail] [data-testid=error]').first(), /Not found/);
  assert.match(error, /belongs to another account/);
  assert.match(await page.locator('[data-testid=stream-state]').textContent(), /no longer live|not available/);
  assert.equal(await page.locator('[data-testid=round]').count(), 0);
  await shot(page, 'owner-other-tenant');
  await done(page);
});

test('the catalog adds a preset in the chosen variant, and a keyed preset with its key sealed, never shown', async () => {
  const page = await signedIn(owner.token, 'MCP');
  const workspace = page.locator('[data-testid=preset][data-preset="google_workspace"]');
  await workspace.waitFor();
  const variants = await workspace.locator('select option').allTextContents();
  assert.ok(variants.includes('Gmail') && variants.includes('Google Drive'), variants.join(', '));
  await workspace.locator('select').selectOption({ label: 'Google Drive' });
  await workspace.locator('button:text-is("Add")').click();
  const drive = page.locator('[data-testid=server]').filter({ hasText: 'google_workspace · drive' });
  await drive.waitFor();
  assert.match(await drive.textContent(), /Sign-in needed/);
  await drive.locator('[data-testid=auth-panel]').waitFor();

  const key = 'tvly-console-test-key-0123456789';
  const tavily = page.locator('[data-testid=preset][data-preset="tavily"]');
  assert.equal(await tavily.locator('button:text-is("Add")').isDisabled(), true);
  await tavily.getByLabel('Tavily API key').fill(key);
  await tavily.locator('button:text-is("Add")').click();
  const keyed = page.locator('[data-testid=server]').filter({ hasText: 'tavily' });
  await keyed.waitFor();
  await keyed.locator('summary:text-is("Advanced")').click();
  assert.match(await keyed.textContent(), /sends sealed headers/);
  assert.equal(await tavily.getByLabel('Tavily API key').inputValue(), '');
  assert.ok(!(await page.locator('body').textContent()).includes(key));
  const listed = (await node.call(owner.token, 'GET', '/v1/servers')).body;
  assert.ok(listed.some((s) => s.preset_id === 'google_workspace' && s.variant === 'drive'));
  assert.ok(!JSON.stringify(listed).includes(key));
  await shot(page, 'owner-mcp-catalog');
  await done(page);
});
