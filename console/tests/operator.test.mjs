// The operator's pages: the Node page's plots move while runs and tenants
// start through the API (the plotted series' last value changes and the
// samples grow) and show a round's wave and call latency, and the Tenants page creates a tenant and issues a token
// that works, shown once, then revokes it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openPage, shot, signIn, startBrowser, startNode } from './harness.mjs';

let node;
let browser;

before(async () => {
  node = await startNode();
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  node?.stop();
});

/** What a plot holds now: { points, last: {series: value} } (read back from uPlot). */
async function plotted(page, id) {
  return page.$eval(`[data-testid=plot-${id}]`, (figure) => ({
    points: Number(figure.dataset.points || 0),
    last: JSON.parse(figure.dataset.last || '{}'),
  }));
}

/** Waits until `check(plotted)` holds; answers the plot then. */
async function plotUntil(page, id, check, what) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const now = await plotted(page, id);
    if (check(now)) return now;
    if (Date.now() > deadline) assert.fail(`${what}: the ${id} plot stayed at ${JSON.stringify(now)}`);
    await page.waitForTimeout(250);
  }
}

test('the Node page shows the status and its actors plot moves as runs and tenants start', async () => {
  const page = await openPage(browser);
  await signIn(page, node.base, node.adminToken);
  // (the shell's sign-in asks whoami first, which refuses the admin token)
  page.problems.length = 0;
  await page.waitForSelector('[data-testid=node-id]');
  const status = await node.call(node.adminToken, 'GET', '/v1/admin/status');
  assert.equal(await page.textContent('[data-testid=node-id]'), status.body.node_id);
  assert.equal(await page.textContent('[data-testid=node-http-port]'), String(node.runtime.http_port));
  assert.match(await page.textContent('[data-testid=store-health]'), /answering/);

  const first = await plotUntil(page, 'actors', (p) => p.points >= 2, 'two samples');
  const tenantsBefore = first.last.tenant ?? 0;
  const runsBefore = first.last.run ?? 0;

  // Two tenants, each with two live runs (a run actor each, a tenant actor each).
  for (const name of ['Plot team A', 'Plot team B']) {
    const { token } = await node.tenant(name);
    const agents = await node.call(token, 'GET', '/v1/agents');
    for (let i = 0; i < 2; i++) {
      const run = await node.call(token, 'POST', '/v1/runs', { agent_id: agents.body[0].agent_id, channel: 'owner_text_chat' });
      assert.equal(run.status, 201);
    }
  }
  const moved = await plotUntil(
    page,
    'actors',
    (p) => p.points > first.points && (p.last.run ?? 0) >= runsBefore + 4 && (p.last.tenant ?? 0) >= tenantsBefore + 2,
    'four runs and two tenants more',
  );
  assert.ok(moved.points > first.points);
  assert.notEqual(moved.last.run, first.last.run);
  // The visible legend agrees with what uPlot holds.
  assert.equal(await page.textContent('[data-testid=latest-actors-run]'), String(moved.last.run));
  // The message-rate plot has seen the run actors' kind and the HTTP requests.
  const rates = await plotted(page, 'rates');
  assert.ok('http requests' in rates.last);

  // A round of two calls in one wave: the latency plot gains wave and call
  // latency for the interval it ran in.
  const { token } = await node.tenant('Plot team C');
  const agents = await node.call(token, 'GET', '/v1/agents');
  const run = await node.call(token, 'POST', '/v1/runs', { agent_id: agents.body[0].agent_id, channel: 'owner_text_chat' });
  const round = await node.call(token, 'POST', `/v1/runs/${run.body.run_id}/tool-calls`, {
    calls: [{ call_id: 'a', name: 'get_current_time' }, { call_id: 'b', name: 'get_current_time' }],
  });
  assert.equal(round.body.outputs[1].status, 'ok');
  const latency = await plotUntil(page, 'latency', (p) => p.last.wave > 0 && p.last.call > 0, 'a wave and its calls timed');
  assert.ok(latency.last.call >= latency.last.wave);
  assert.equal(await page.$('[data-testid=no-run-latency]'), null);
  assert.match(await page.textContent('[data-testid=store-bytes]'), /^\d+(\.\d)? (B|KiB|MiB|GiB)$/);
  assert.ok((await page.$$('[data-testid=actor-kind]')).length >= 4);
  await shot(page, 'operator-node');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test('the Tenants page creates a tenant, issues a token shown once that works, and revokes it', async () => {
  const page = await openPage(browser);
  await signIn(page, node.base, node.adminToken);
  // (the shell's sign-in asks whoami first, which refuses the admin token)
  page.problems.length = 0;
  await page.click('nav a:text("Tenants")');
  await page.waitForSelector('[data-testid=tenants]');
  const name = 'Console <b>made</b> team';
  await page.fill('[data-testid=tenant-name]', name);
  await page.click('[data-testid=create-tenant]');
  // Created, listed (its name shown as text) and selected.
  const tokens = await page.waitForSelector('[data-testid=tokens]');
  assert.match(await tokens.textContent(), /Tokens of Console <b>made<\/b> team/);
  const listed = await node.call(node.adminToken, 'GET', '/v1/admin/tenants');
  const tenant = listed.body.find((t) => t.name === name);
  assert.ok(tenant, 'the tenant exists');
  assert.ok(page.url().endsWith(`#/tenants/${tenant.tenant_id}`));
  assert.equal(await page.$$eval('[data-testid=tenant] b', (b) => b.length), 0);

  await page.fill('[data-testid=token-label]', 'laptop');
  await page.click('[data-testid=issue-token]');
  const secret = (await (await page.waitForSelector('[data-testid=issued-token]')).textContent()).trim();
  assert.match(secret, /^vxt_/);
  const who = await node.call(secret, 'GET', '/v1/whoami');
  assert.equal(who.status, 200);
  assert.equal(who.body.tenant_name, name);
  await page.waitForSelector('[data-testid=token][data-revoked="0"]');
  assert.match(await page.textContent('[data-testid=token]'), /laptop/);
  await shot(page, 'operator-tenants-issued');

  // Shown once: after a reload the page holds no secret.
  await page.reload();
  await page.waitForSelector('[data-testid=token]');
  assert.equal(await page.$('[data-testid=issued-token]'), null);
  assert.equal((await page.content()).includes(secret), false);

  // Revoke asks once more, then the token stops working.
  await page.click('[data-testid=revoke]');
  await page.click('[data-testid=revoke-yes]');
  await page.waitForSelector('[data-testid=token][data-revoked="1"]');
  assert.equal((await node.call(secret, 'GET', '/v1/whoami')).status, 401);
  await shot(page, 'operator-tenants-revoked');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
