// The MCP page's Auth panel in a real browser against a real node, an OAuth
// authorization server and the MCP server it protects (oidc-provider and the
// SDK, tests/peers/oauth_peer.mjs): Start sign-in shows the provider's page
// and the exact redirect URI; the owner's browser goes through the provider
// back to the node's callback; Finalize connection connects; Save client &
// start sign-in uses the owner's own client; a revoked sign-in is shown in
// words; Delete server asks first.
//
// The node's public base URL is its default, http://localhost:7100: the
// browser's requests to the callback there are passed to the node's real
// port by the test (what a reverse proxy in front of a node does).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openPage, shot, signIn, startBrowser, startNode, startOAuthPeer } from './harness.mjs';

const redirectUri = 'http://localhost:7100/api/mcp/auth/callback';

let node;
let browser;
let peer;
let owner;

before(async () => {
  peer = await startOAuthPeer();
  node = await startNode({
    registered_urls: [
      { url: peer.mcpUrl, purpose: 'mcp' },
      { url: `${peer.issuer}/`, purpose: 'oauth' },
      { url: `http://127.0.0.1:${peer.mcpPort}/`, purpose: 'oauth' },
    ],
  });
  owner = await node.tenant('Auth team');
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  node?.stop();
  peer?.stop();
});

/** Passes the browser's callback requests to the node; answers the statuses seen. */
async function proxyCallback(context) {
  const statuses = [];
  await context.route(`${redirectUri}**`, async (route) => {
    const url = new URL(route.request().url());
    const answer = await fetch(node.base + url.pathname + url.search);
    statuses.push(answer.status);
    await route.fulfill({ status: answer.status, contentType: 'application/json', body: await answer.text() });
  });
  return statuses;
}

/** Opens the sign-in link in a new tab and waits for the provider to send it to the callback. */
async function followSignIn(page, panel) {
  const [tab] = await Promise.all([
    page.context().waitForEvent('page'),
    panel.locator('[data-testid=sign-in-answer] a').click(),
  ]);
  await tab.waitForURL(/localhost:7100\/api\/mcp\/auth\/callback/, { timeout: 20_000 });
  await tab.waitForLoadState();
  await tab.close();
}

test('Start sign-in, the provider, Finalize connection, an own client, a revoked sign-in in words, and Delete server', async () => {
  const page = await openPage(browser);
  const callbacks = await proxyCallback(page.context());
  await signIn(page, node.base, owner.token);
  await page.click('nav a:text("MCP")');
  await page.fill('#custom-url', peer.mcpUrl);
  await page.fill('#custom-label', 'Notes (OAuth)');
  await page.selectOption('#custom-auth', 'oauth_authorization_code');
  await page.click('[data-testid=custom-form] button[type=submit]');
  const card = page.locator('[data-testid=server]').filter({ has: page.locator('[data-testid=server-label]:text-is("Notes (OAuth)")') });
  await card.waitFor();
  assert.match(await card.textContent(), /Sign-in needed/);
  const panel = card.locator('[data-testid=auth-panel]');
  assert.equal(await panel.getAttribute('open'), '');

  // Start sign-in: the provider's page and the exact redirect URI to copy.
  await panel.locator('button:text-is("Start sign-in")').click();
  await panel.locator('[data-testid=sign-in-answer]').waitFor();
  assert.equal(await panel.locator('[data-testid=redirect-uri]').inputValue(), redirectUri);
  const href = await panel.locator('[data-testid=sign-in-answer] a').getAttribute('href');
  assert.ok(href.startsWith(`${peer.issuer}/`), href);
  assert.equal(await panel.locator('[data-testid=sign-in-answer] a').getAttribute('rel'), 'noopener noreferrer');
  await shot(page, 'auth-started');
  await followSignIn(page, panel);
  assert.deepEqual(callbacks, [200]);

  // Finalize connection: tested again, connected, signed in.
  await panel.locator('button:text-is("Finalize connection")').click();
  await panel.locator('p.ok').waitFor();
  assert.match(await panel.locator('p.ok').textContent(), /^Connected: \d+ tools discovered\.$/);
  await card.locator('[data-testid=connected]:text-is("Connected")').waitFor();
  assert.match(await panel.locator('summary').textContent(), /— signed in$/);
  assert.match(await card.locator('[data-testid=discovered-tools]').textContent(), /read_note/);
  await shot(page, 'auth-finalized');

  // Save client & start sign-in: the owner's own client, registered at the provider.
  const registered = await fetch(`${peer.issuer}/reg`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [redirectUri], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }),
  }).then((r) => r.json());
  await panel.getByLabel('Client ID').fill(registered.client_id);
  await panel.getByLabel('Client secret').fill(registered.client_secret);
  await panel.locator('button:text-is("Save client & start sign-in")').click();
  await page.waitForFunction((id) => {
    const link = document.querySelector('[data-testid=sign-in-answer] a');
    return link && new URL(link.href).searchParams.get('client_id') === id;
  }, registered.client_id);
  await followSignIn(page, panel);
  assert.deepEqual(callbacks, [200, 200]);
  // The secret is sealed on the node: the page keeps no copy, no listing shows it.
  assert.equal(await panel.getByLabel('Client secret').inputValue(), '');
  assert.equal(await panel.getByLabel('Client ID').inputValue(), registered.client_id);
  const listed = JSON.stringify((await node.call(owner.token, 'GET', '/v1/servers')).body);
  assert.ok(!listed.includes(registered.client_secret));

  // The provider revokes everything: the next test says to sign in again, in words.
  await fetch(`${peer.control}/revoke`, { method: 'POST' });
  await card.locator('button:text-is("Test connection")').click();
  const error = card.locator('[data-testid=error]').first();
  await error.waitFor();
  assert.match(await error.textContent(), /The connection test failed\. This server needs you to sign in \(open Auth and start sign-in\)/);
  assert.doesNotMatch(await error.textContent(), /\b40\d\b/);
  await card.locator('[data-testid=connected]:text-is("Not connected")').waitFor();
  assert.match(await panel.locator('summary').textContent(), /— sign-in needed$/);
  await shot(page, 'auth-revoked');

  // Delete server (from the Auth panel) asks first.
  await panel.locator('button:text-is("Delete server")').click();
  assert.match(await panel.textContent(), /This cannot be undone/);
  await panel.locator('button:text-is("Cancel")').click();
  await panel.locator('button:text-is("Delete server")').click();
  await panel.locator('button:text-is("Yes, delete server")').click();
  await card.waitFor({ state: 'detached' });
  const servers = (await node.call(owner.token, 'GET', '/v1/servers')).body;
  assert.equal(servers.some((s) => s.label === 'Notes (OAuth)'), false);
  assert.deepEqual(page.problems.filter((p) => !/Failed to load resource/.test(p)), []);
  await page.context().close();
});
