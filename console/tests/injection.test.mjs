// Script in what the console shows is shown as text, never run: a hostile
// MCP peer (sdk_peer.mjs --hostile: a tool whose title and description hold
// an <img onerror> tag and a </script><script> break-out, and a tool whose
// name is such a tag, which discovery skips: no record keeps a name outside
// [A-Za-z0-9_.-]), a server label and an agent name holding the same.
// The owner adds and tests the server and opens MCP, Tools and Runs; the
// page's own flag (window.__pwned) stays unset, no element is made from the
// text, and the text itself is on screen.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openPage, shot, signIn, startBrowser, startNode, startPeer } from './harness.mjs';

const IMG = '<img src=x onerror=window.__pwned=1>';
const SCRIPT = '</script><script>window.__pwned=2</script>';
const LABEL = `${IMG}${SCRIPT}`;

let node;
let browser;
let peer;
let owner;

before(async () => {
  peer = await startPeer('sdk_peer.mjs', ['--json', '--hostile']);
  node = await startNode({ registered_urls: [{ url: peer.url, purpose: 'mcp' }] });
  owner = await node.tenant('Injection team');
  const agent = await node.call(owner.token, 'POST', '/v1/agents', { name: `Agent ${IMG}` });
  assert.equal(agent.status, 201);
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  node?.stop();
  peer?.stop();
});

/** Nothing ran and no element was made from the hostile text. */
async function assertInert(page, requests) {
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length), 0);
  // The one script element is the console's own module.
  assert.deepEqual(await page.evaluate(() => [...document.scripts].map((s) => s.getAttribute('src'))), ['/console/app.js']);
  assert.deepEqual(requests.filter((url) => /\/x$/.test(url)), []);
  assert.deepEqual(page.problems, []);
}

test('hostile tool names, titles, descriptions, a server label and an agent name are shown as text and never run', async () => {
  const page = await openPage(browser);
  const requests = [];
  page.on('request', (request) => requests.push(request.url()));
  await signIn(page, node.base, owner.token);

  // MCP: the owner adds the server under a hostile label and tests it.
  await page.click('nav a:text("MCP")');
  await page.fill('#custom-url', peer.url);
  await page.fill('#custom-label', LABEL);
  await page.click('[data-testid=custom-form] button[type=submit]');
  const card = page.locator('[data-testid=server]').filter({
    has: page.locator('[data-testid=server-label]', { hasText: 'onerror' }),
  });
  await card.waitFor();
  assert.equal(await card.locator('[data-testid=server-label]').textContent(), LABEL);
  await card.locator('button:text-is("Test connection")').click();
  // The tool whose name is markup is skipped by discovery (no record keeps
  // such a name) and the test says so; the rest of the server works.
  const result = await card.locator('[data-testid=test-result]').textContent();
  assert.match(result, /^Connected: \d+ tools discovered, 1 skipped\.$/);

  // The discovered tools: the hostile title and description as text.
  const hostile = card.locator('tr[data-tool="hostile_text"]');
  await hostile.waitFor();
  assert.equal(await hostile.locator('[data-testid=tool-title]').textContent(), IMG);
  assert.equal(await hostile.locator('[data-testid=tool-description]').textContent(), `Echoes text. ${SCRIPT} ${IMG}`);
  const names = await card.locator('[data-testid=tool-name]').allTextContents();
  assert.ok(names.includes('hostile_text') && !names.includes(IMG), `tool names shown: ${names.join(', ')}`);

  // Allowed and granted: the hostile tool reaches the grants of two agents.
  await card.getByLabel('Allow hostile_text', { exact: true }).check();
  const grants = card.locator('[data-testid=server-grants]');
  await grants.locator('tr[data-tool="hostile_text"]').nth(1).waitFor();
  const agentsShown = await grants.locator('tr[data-tool="hostile_text"] td:first-child').allTextContents();
  assert.deepEqual(agentsShown.sort(), [`Agent ${IMG}`, 'Default']);
  await shot(page, 'injection-mcp');
  await assertInert(page, requests);

  // Tools: the agent picker, the server's section title and its tool names.
  await page.click('nav a:text("Tools")');
  await page.waitForSelector('[data-testid=server-tools]');
  const options = await page.locator('#agent option').allTextContents();
  assert.ok(options.includes(`Agent ${IMG}`), `agents: ${options.join(', ')}`);
  const section = page.locator('[data-testid=server-tools]', { hasText: 'onerror' });
  assert.equal(await section.locator('h3').textContent(), `MCP server: ${LABEL}`);
  const toolNames = await section.locator('td.mono').allTextContents();
  assert.ok(toolNames.includes('hostile_text'), toolNames.join(', '));
  await page.selectOption('#agent', { label: `Agent ${IMG}` });
  await page.waitForSelector('[data-testid=server-tools]');
  await shot(page, 'injection-tools');
  await assertInert(page, requests);

  // Runs: a run that has the hostile tool in its snapshot.
  const [serverRecord] = (await node.call(owner.token, 'GET', '/v1/servers')).body.filter((s) => s.label === LABEL);
  const id = serverRecord.server_id;
  assert.equal((await node.call(owner.token, 'PATCH', `/v1/servers/${id}`, { enabled: true, trusted: true })).status, 200);
  assert.equal((await node.call(owner.token, 'POST', `/v1/servers/${id}/test`)).status, 200);
  const agents = (await node.call(owner.token, 'GET', '/v1/agents')).body;
  const agentId = agents.find((a) => a.is_default).agent_id;
  const put = await node.call(owner.token, 'PUT', `/v1/agents/${agentId}/grants`, { server_id: id, tool: 'hostile_text', decision: 'allow' });
  assert.equal(put.status, 200);
  const run = await node.call(owner.token, 'POST', '/v1/runs', { agent_id: agentId, channel: 'owner_text_chat' });
  assert.equal(run.status, 201);
  await page.goto(`${node.base}/#/runs/${run.body.run_id}`);
  await page.waitForSelector('[data-testid=snapshot] tr[data-tool="hostile_text"]');
  await shot(page, 'injection-runs');
  await assertInert(page, requests);
  await node.call(owner.token, 'POST', `/v1/runs/${run.body.run_id}/finish`);
  await page.context().close();
});
