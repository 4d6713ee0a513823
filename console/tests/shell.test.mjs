// The console's shell: served by the node with its security headers, signed
// in with a tenant token (owner pages) or the admin token (operator pages),
// the token kept in session storage only, failures shown in words.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { openPage, shot, signIn, startBrowser, startNode } from './harness.mjs';

let node;
let browser;
let owner;

before(async () => {
  node = await startNode();
  owner = await node.tenant('Shell test team');
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  node?.stop();
});

test('every console answer carries the CSP and frame headers, a 404 included', async () => {
  for (const [path, status] of [['/', 200], ['/console/app.js', 200], ['/console/vendor/preact.js', 200], ['/console/nope.js', 404], ['/console/..%2fvar%2fsecrets.json', 404]]) {
    const response = await fetch(node.base + path, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(response.status, status, path);
    const csp = response.headers.get('content-security-policy');
    assert.match(csp, /script-src 'self'/, path);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
    assert.match(csp, /frame-ancestors 'none'/, path);
    assert.equal(response.headers.get('x-frame-options'), 'DENY', path);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff', path);
  }
  // Dot segments as sent (fetch would resolve them first): a key of the
  // loaded files, never a path opened, so nothing outside is reached.
  for (const raw of ['/console/../../var/secrets.json', '/console/%2e%2e/%2e%2e/var/secrets.json']) {
    const answer = await new Promise((done, fail) => {
      http.get({ host: '127.0.0.1', port: node.runtime.http_port, path: raw }, (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => done({ status: res.statusCode, headers: res.headers, body }));
      }).on('error', fail);
    });
    assert.equal(answer.status, 404, raw);
    assert.equal(answer.headers['x-frame-options'], 'DENY', raw);
    assert.doesNotMatch(answer.body, /admin_token/, raw);
  }
  const index = await (await fetch(node.base + '/')).text();
  // No inline script: every script element names a file of the console.
  for (const tag of index.match(/<script\b[^>]*>/g)) assert.match(tag, /src="\/console\//);
  assert.doesNotMatch(index, /<script\b[^>]*>[^<]*\S[^<]*<\/script>/);
});

test('a wrong token is refused in words, and nothing is stored', async () => {
  const page = await openPage(browser);
  await page.goto(node.base + '/');
  await page.fill('#token', 'not-a-token');
  await page.click('button[type=submit]');
  const error = await page.waitForSelector('[data-testid=error]');
  const text = await error.textContent();
  assert.match(text, /not valid here/);
  assert.doesNotMatch(text, /\b401\b/);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await shot(page, 'shell-wrong-token');
  await page.context().close();
});

test('a tenant token opens the owner pages; the token stays in session storage, never a cookie or the URL', async () => {
  const page = await openPage(browser);
  await signIn(page, node.base, owner.token);
  assert.equal(await page.textContent('[data-testid=who]'), 'Shell test team');
  const nav = await page.$$eval('nav a', (links) => links.map((a) => a.textContent));
  assert.deepEqual(nav, ['Tools', 'MCP', 'Runs', 'Audit', 'Knowledge', 'Schedules', 'Contacts']);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('voxos.token')), owner.token);
  assert.deepEqual(await page.context().cookies(), []);
  assert.equal(page.url().includes(owner.token), false);
  // A reload of the tab keeps the session; a new tab (context) does not.
  await page.reload();
  await page.waitForSelector('[data-testid=who]');
  const other = await openPage(browser);
  await other.goto(node.base + '/');
  await other.waitForSelector('#token');
  await shot(page, 'shell-owner');
  assert.deepEqual(page.problems, []);
  await other.context().close();
  await page.context().close();
});

test('a revoked token signs the owner out with a sentence saying why', async () => {
  const { tenantId, token } = await node.tenant('Revoked team');
  const page = await openPage(browser);
  await signIn(page, node.base, token);
  const tokens = await node.call(node.adminToken, 'GET', `/v1/admin/tenants/${tenantId}/tokens`);
  const id = tokens.body.tokens ? tokens.body.tokens[0].token_id : tokens.body[0].token_id;
  const revoked = await node.call(node.adminToken, 'DELETE', `/v1/admin/tenants/${tenantId}/tokens/${id}`);
  assert.equal(revoked.status, 200);
  // The next API call the tab makes (the page's own polling, or opening
  // another page) meets the revoked token.
  await page.evaluate(() => {
    location.hash = '#/audit';
  });
  const error = await page.waitForSelector('[data-testid=error]', { timeout: 10_000 });
  assert.match(await error.textContent(), /no longer valid/);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await page.context().close();
});

test('the admin token opens the operator pages', async () => {
  const page = await openPage(browser);
  await signIn(page, node.base, node.adminToken);
  assert.match(await page.textContent('[data-testid=who]'), /^operator · node /);
  const nav = await page.$$eval('nav a', (links) => links.map((a) => a.textContent));
  assert.deepEqual(nav, ['Node', 'Tenants']);
  await page.context().close();
});
