// The owner's review pages: Audit's filters narrow the allow and deny
// decisions runs made; a schedule an agent made in a chat is paused, resumed
// and deleted from Schedules; a candidate a run submitted is confirmed from
// Knowledge and the consent toggle is stored. Every change is read back
// through the API, and hostile text (an agent's name) is shown, never run.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openPage, shot, startBrowser, startNode } from './harness.mjs';

let node;
let browser;
let owner;
let agentId;
let hostileId;
const hostileName = '<img src=x onerror="window.__injected=1">Helper</script>';

/** A call in the owner's name: answers the body, failing the test on another status. */
async function call(method, path, body, status = 200) {
  const answer = await node.call(owner.token, method, path, body);
  assert.equal(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body)}`);
  return answer.body;
}

async function grant(agent, tool) {
  await call('PUT', `/v1/agents/${agent}/grants`, { tool, decision: 'allow' });
}

async function startRun(agent) {
  return (await call('POST', '/v1/runs', { agent_id: agent, channel: 'owner_text_chat' }, 201)).run_id;
}

/** One tool call in its own round; answers its structured result. */
async function toolResult(run, name, args) {
  const answer = await call('POST', `/v1/runs/${run}/tool-calls`, { calls: [{ call_id: 'c1', name, arguments: args }] });
  const [out] = answer.outputs;
  assert.equal(out.status, 'ok', JSON.stringify(out));
  return out.output.structuredContent;
}

before(async () => {
  node = await startNode();
  owner = await node.tenant('Review team');
  agentId = (await call('GET', '/v1/agents'))[0].agent_id;
  hostileId = (await call('POST', '/v1/agents', { name: hostileName }, 201)).agent_id;
  for (const tool of ['create_task_plan', 'create_agent_schedule', 'record_agent_improvement']) await grant(agentId, tool);
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  node?.stop();
});

/** Signs the owner in straight onto `route` (the hash stays through the sign-in). */
async function ownerPage(route) {
  const page = await openPage(browser);
  await page.goto(`${node.base}/${route}`);
  await page.fill('#token', owner.token);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=who]');
  return page;
}

/** The rows the audit table shows: [{decision, phase, tool, agent}]. */
function auditRows(page) {
  return page.$$eval('[data-testid=audit-row]', (rows) => rows.map((r) => ({ ...r.dataset })));
}

async function choose(page, select, value) {
  const before = await page.textContent('[data-testid=audit-count]');
  await page.selectOption(`[data-testid=${select}]`, value);
  await page.waitForFunction((b) => document.querySelector('[data-testid=audit-count]').textContent !== b, before);
}

test('Audit shows allow and deny decisions, newest first, and each filter narrows the rows', async () => {
  // A run with a granted tool (allowed at the check) and a tool not granted
  // (denied), and a run of the second agent (its composition only).
  const run = await startRun(agentId);
  assert.equal((await call('POST', `/v1/runs/${run}/checks`, { tool: 'create_task_plan' })).allowed, true);
  assert.equal((await call('POST', `/v1/runs/${run}/checks`, { tool: 'create_agent_memory' })).allowed, false);
  await startRun(hostileId);

  const page = await ownerPage('#/audit');
  await page.waitForSelector('[data-testid=audit-row]');
  const all = await auditRows(page);
  assert.ok(all.some((r) => r.decision === 'allowed') && all.some((r) => r.decision === 'denied'));
  assert.ok(new Set(all.map((r) => r.agent)).size === 2);
  // Newest first: the second agent's run started last.
  assert.equal(all[0].agent, hostileId);
  // The hostile agent name is an option's text, and nothing ran.
  const options = await page.$$eval('[data-testid=filter-agent] option', (o) => o.map((x) => x.textContent));
  assert.ok(options.includes(hostileName));
  assert.equal(await page.evaluate(() => window.__injected), undefined);
  assert.equal(await page.$$eval('img', (imgs) => imgs.length), 0);

  await choose(page, 'filter-phase', 'execute');
  const executed = await auditRows(page);
  assert.deepEqual(
    executed.map((r) => [r.tool, r.decision]),
    [['create_agent_memory', 'denied'], ['create_task_plan', 'allowed']],
  );
  await shot(page, 'review-audit-execute');

  await choose(page, 'filter-phase', '');
  await choose(page, 'filter-tool', 'create_task_plan');
  const oneTool = await auditRows(page);
  assert.ok(oneTool.length < all.length);
  assert.ok(oneTool.every((r) => r.tool === 'create_task_plan'));
  // Composed for both agents' runs (granted to one), checked for one.
  assert.deepEqual(new Set(oneTool.map((r) => r.phase)), new Set(['compose', 'execute']));

  await choose(page, 'filter-agent', hostileId);
  const narrowed = await auditRows(page);
  assert.equal(narrowed.length, 1);
  assert.deepEqual([narrowed[0].agent, narrowed[0].decision], [hostileId, 'denied']);

  await choose(page, 'filter-tool', '');
  await choose(page, 'filter-decision', 'allowed');
  const allowed = await auditRows(page);
  assert.ok(allowed.length > 0 && allowed.every((r) => r.agent === hostileId && r.decision === 'allowed'));
  await shot(page, 'review-audit-filtered');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test('Schedules pauses, resumes and deletes a schedule an agent made in a chat', async () => {
  const run = await startRun(agentId);
  const at = new Date(Date.now() + 2 * 3600_000).toISOString().slice(0, 19);
  const made = await toolResult(run, 'create_agent_schedule', {
    task_name: 'Water the plants',
    instruction: 'Remind me to water the plants.',
    timing: { kind: 'once', at },
    timezone: 'Europe/Lisbon',
  });
  const id = made.schedule_id;
  const state = async () => (await call('GET', '/v1/schedules')).schedules.find((s) => s.schedule_id === id)?.state;

  const page = await ownerPage('#/schedules');
  const row = `[data-testid=schedule][data-id="${id}"]`;
  await page.waitForSelector(`${row}[data-state=active]`);
  assert.match(await page.textContent(row), /Water the plants/);
  const due = await page.textContent(`${row} [data-testid=next-due]`);
  assert.ok(due.includes(made.next_due_local.slice(0, 10)), due);
  assert.match(due, /Europe\/Lisbon/);
  assert.match(due, /Z$/);

  await page.click(`${row} [data-testid=pause]`);
  await page.waitForSelector(`${row}[data-state=paused]`);
  assert.equal(await page.textContent(`${row} [data-testid=schedule-state]`), 'Paused');
  assert.equal(await state(), 'paused');
  await shot(page, 'review-schedule-paused');

  await page.click(`${row} [data-testid=resume]`);
  await page.waitForSelector(`${row}[data-state=active]`);
  assert.equal(await state(), 'active');

  // Delete asks once more; Cancel keeps it.
  await page.click(`${row} [data-testid=delete]`);
  await page.click(`${row} button:text("Cancel")`);
  assert.equal(await state(), 'active');
  await page.click(`${row} [data-testid=delete]`);
  await page.click(`${row} [data-testid=delete-yes]`);
  await page.waitForSelector('[data-testid=no-schedules]');
  assert.equal(await state(), undefined);
  await shot(page, 'review-schedule-deleted');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test('Knowledge confirms a candidate a run submitted, and the consent toggle is stored', async () => {
  const run = await startRun(agentId);
  const submitted = await toolResult(run, 'record_agent_improvement', {
    kind: 'memory',
    title: 'Seat',
    content: 'Prefers aisle seats <script>window.__injected=2</script>',
  });
  assert.equal(submitted.status, 'pending_review');
  const id = submitted.candidate_id;

  const page = await ownerPage('#/knowledge');
  const card = `[data-testid=pending] [data-testid=candidate][data-id="${id}"]`;
  await page.waitForSelector(card);
  assert.equal(await page.textContent('[data-testid=pending-count]'), '1');
  assert.equal(
    await page.textContent(`${card} [data-testid=candidate-content]`),
    'Prefers aisle seats <script>window.__injected=2</script>',
  );
  assert.match(await page.textContent(card), new RegExp(run));
  await shot(page, 'review-knowledge-pending');

  await page.click(`${card} [data-testid=confirm]`);
  await page.waitForSelector(`[data-testid=decided] [data-testid=candidate][data-id="${id}"][data-status=confirmed]`);
  await page.waitForSelector('[data-testid=none-pending]');
  const decided = await call('GET', '/v1/knowledge/candidates?status=decided');
  assert.equal(decided.candidates.find((c) => c.id === id).status, 'confirmed');
  // Confirmed: the memory reaches the agent's next run.
  const memories = await toolResult(await startRun(agentId), 'list_agent_memories', {});
  assert.ok(memories.memories.some((m) => m.content.startsWith('Prefers aisle seats')));

  assert.equal(await page.isChecked('[data-testid=consent]'), false);
  await page.click('[data-testid=consent]');
  await page.waitForFunction(() => document.querySelector('[data-testid=consent]').checked && !document.querySelector('[data-testid=consent]').disabled);
  assert.equal((await call('GET', '/v1/knowledge/candidates')).automatic_saving, true);
  assert.equal(await page.evaluate(() => window.__injected), undefined);
  await shot(page, 'review-knowledge-confirmed');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
