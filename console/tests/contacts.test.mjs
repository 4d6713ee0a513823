// The owner's Contacts page: a contact added through the form is listed and
// stored; a phone number that is not E.164 is refused in words naming the
// field and nothing is stored; a display name holding markup is shown as
// text and never runs; a contact is edited and deleted after a confirmation;
// a phone integration is added and deleted; another tenant's token sees none
// of it. Every change is read back through the API.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openPage, shot, startBrowser, startNode } from './harness.mjs';

const HOSTILE = '<img src=x onerror=window.__pwned=1>';

let node;
let browser;
let owner;
let other;

before(async () => {
  node = await startNode();
  owner = await node.tenant('Contacts team');
  other = await node.tenant('Other team');
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  node?.stop();
});

/** What the node stores for `who`: GET `path`'s `key` list. */
async function stored(who, path, key) {
  const answer = await node.call(who.token, 'GET', path);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body[key];
}
const contactsOf = (who) => stored(who, '/v1/contacts', 'contacts');
const phonesOf = (who) => stored(who, '/v1/phones', 'phones');

/** Signs `who` in straight onto the Contacts page. */
async function contactsPage(who) {
  const page = await openPage(browser);
  page.requests = [];
  page.on('request', (request) => page.requests.push(request.url()));
  await page.goto(`${node.base}/#/contacts`);
  await page.fill('#token', who.token);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=contacts-page]');
  await page.waitForSelector('[data-testid=no-contacts], [data-testid=contact-list]');
  return page;
}

/** The problems a page logged, less the browser's own line for a refused request. */
const unexpected = (page) => page.problems.filter((p) => !/Failed to load resource/.test(p));

async function fillContact(page, { name, phone, admin = false, email = '' }) {
  await page.fill('#contact-name', name);
  await page.fill('#contact-phone', phone);
  if (admin) await page.check('#contact-admin');
  await page.fill('#contact-email', email);
  await page.click('[data-testid=contact-form] button[type=submit]');
}

test('a contact added on the page is listed and stored; a bad phone is refused in words and stores nothing', async () => {
  const page = await contactsPage(owner);
  assert.equal(await page.textContent('[data-testid=no-contacts]'), 'No saved contacts.');
  // The nav lists the page after Schedules and marks it current.
  assert.equal(await page.textContent('nav a[aria-current=page]'), 'Contacts');

  await fillContact(page, { name: 'Ada Lovelace', phone: '+14155550100', admin: true, email: 'ada@example.com' });
  const row = page.locator('[data-testid=contact]', { hasText: 'Ada Lovelace' });
  await row.waitFor();
  assert.equal(await row.locator('[data-testid=contact-phone]').textContent(), '+14155550100');
  assert.equal(await row.locator('[data-testid=contact-admin]').textContent(), 'Admin');
  assert.equal(await row.locator('[data-testid=contact-email]').textContent(), 'ada@example.com');
  const [ada] = await contactsOf(owner);
  assert.deepEqual(
    { ...ada, contact_id: undefined },
    { contact_id: undefined, display_name: 'Ada Lovelace', phone: '+14155550100', is_admin: true, email: 'ada@example.com' },
  );
  assert.match(ada.contact_id, /^c-[0-9a-f]{12}$/);
  // The form is empty again for the next contact.
  assert.equal(await page.inputValue('#contact-name'), '');
  await shot(page, 'contacts-added');

  // Not E.164: the node refuses it, the page says which field and why.
  await fillContact(page, { name: 'Bob', phone: '555-0100' });
  const error = page.locator('[data-testid=contact-form] [data-testid=error]');
  await error.waitFor();
  const said = await error.textContent();
  assert.match(said, /not saved/);
  assert.match(said, /Phone: expected E\.164/);
  assert.doesNotMatch(said, /555-0100/);
  assert.equal((await contactsOf(owner)).length, 1);
  assert.equal(await page.locator('[data-testid=contact]').count(), 1);
  await shot(page, 'contacts-bad-phone');
  assert.deepEqual(unexpected(page), []);
  await page.context().close();
});

test('a display name holding markup is shown as text and never runs; edited, then deleted after a confirmation', async () => {
  const page = await contactsPage(owner);
  await fillContact(page, { name: HOSTILE, phone: '+442071234567' });
  const row = page.locator('[data-testid=contact]', { hasText: 'onerror' });
  await row.waitFor();
  assert.equal(await row.locator('[data-testid=contact-name]').textContent(), HOSTILE);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length), 0);
  assert.deepEqual(page.requests.filter((url) => /\/x$/.test(url)), []);
  const id = await row.getAttribute('data-id');
  assert.ok((await contactsOf(owner)).some((c) => c.contact_id === id && c.display_name === HOSTILE));
  await shot(page, 'contacts-hostile-name');

  // Edit keeps the contact's id.
  await row.locator('[data-testid=edit]').click();
  await page.locator('[data-testid=contact-form] h3', { hasText: 'Edit' }).waitFor();
  assert.equal(await page.inputValue('#contact-name'), HOSTILE);
  await page.fill('#contact-email', 'markup@example.com');
  await page.click('[data-testid=contact-form] button:text-is("Save contact")');
  await page.locator('[data-testid=contact-email]', { hasText: 'markup@example.com' }).waitFor();
  assert.equal((await contactsOf(owner)).find((c) => c.contact_id === id).email, 'markup@example.com');

  // Delete asks once more; Cancel keeps it.
  const target = page.locator(`[data-testid=contact][data-id="${id}"]`);
  await target.locator('[data-testid=delete]').click();
  await target.locator('button:text("Cancel")').click();
  assert.ok((await contactsOf(owner)).some((c) => c.contact_id === id));
  await target.locator('[data-testid=delete]').click();
  await target.locator('[data-testid=delete-yes]').click();
  await target.waitFor({ state: 'detached' });
  assert.equal((await contactsOf(owner)).some((c) => c.contact_id === id), false);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await shot(page, 'contacts-deleted');
  assert.deepEqual(unexpected(page), []);
  await page.context().close();
});

test('a phone integration is added and deleted on the page', async () => {
  const page = await contactsPage(owner);
  await page.waitForSelector('[data-testid=no-phones]');
  await page.fill('#phone-id', 'main-line');
  await page.selectOption('#phone-provider', 'telnyx');
  await page.fill('#phone-tool', 'place_call');
  await page.click('[data-testid=phone-form] button[type=submit]');
  const row = page.locator('[data-testid=phone][data-id="main-line"]');
  await row.waitFor();
  assert.match(await row.textContent(), /Telnyx/);
  assert.equal(await row.locator('[data-testid=phone-connected]').textContent(), 'connected');
  assert.deepEqual(await phonesOf(owner), [
    { integration_id: 'main-line', provider: 'telnyx', call_capable: true, connected: true, place_call_tool: 'place_call' },
  ]);
  await shot(page, 'contacts-phone-added');

  // A malformed id is refused in words; nothing more is stored.
  await page.fill('#phone-id', 'Main Line');
  await page.click('[data-testid=phone-form] button[type=submit]');
  const error = page.locator('[data-testid=phone-form] [data-testid=error]');
  await error.waitFor();
  assert.match(await error.textContent(), /not saved.*Integration_id/s);
  assert.equal((await phonesOf(owner)).length, 1);

  await row.locator('[data-testid=delete-phone]').click();
  await row.locator('[data-testid=delete-phone-yes]').click();
  await page.waitForSelector('[data-testid=no-phones]');
  assert.deepEqual(await phonesOf(owner), []);
  assert.deepEqual(unexpected(page), []);
  await page.context().close();
});

test('another tenant sees none of the owner’s contacts or phones', async () => {
  await node.call(owner.token, 'PUT', '/v1/contacts', {
    contact_id: 'kept', display_name: 'Kept', phone: '+14155550111', is_admin: false,
  });
  await node.call(owner.token, 'PUT', '/v1/phones', {
    integration_id: 'kept-line', provider: 'twilio', call_capable: false, connected: true, place_call_tool: '',
  });
  assert.ok((await contactsOf(owner)).length >= 1);
  const page = await contactsPage(other);
  await page.waitForSelector('[data-testid=no-contacts]');
  await page.waitForSelector('[data-testid=no-phones]');
  assert.equal(await page.locator('[data-testid=contact]').count(), 0);
  assert.deepEqual(await contactsOf(other), []);
  assert.deepEqual(await phonesOf(other), []);
  // Its token cannot delete them either.
  assert.equal((await node.call(other.token, 'DELETE', '/v1/contacts/kept')).status, 404);
  assert.ok((await contactsOf(owner)).some((c) => c.contact_id === 'kept'));
  await shot(page, 'contacts-other-tenant');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
