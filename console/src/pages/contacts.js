// Contacts: the owner's saved contacts (name, phone, admin mark, email and
// notes: the owner's own, never shown to a model) with the add/edit form and
// Delete, and the phone integrations with their add form and Delete.
// Routes: GET|PUT /v1/contacts, DELETE /v1/contacts/{id}, GET|PUT /v1/phones,
// DELETE /v1/phones/{id}. The node checks what is entered (a phone number in
// E.164); its refusal is shown in words.
import { api } from '../api.js';
import { ConfirmButton, ErrorNote, Loading, html, useAction, useEffect, useLoad, useState } from '../lib.js';

/** A new contact's id: "c-" and 12 random hex digits (ids are [a-z0-9_-]). */
function newContactId() {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return `c-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** A form's draft: `set(field)` is an input's handler (checkboxes give their checked state). */
function useDraft(initial) {
  const [draft, setDraft] = useState(initial);
  const set = (field) => (e) => {
    const input = e.currentTarget;
    setDraft((d) => ({ ...d, [field]: input.type === 'checkbox' ? input.checked : input.value }));
  };
  return [draft, setDraft, set];
}

/** PUTs `body` to `path` through `action`; a refusal says what was not saved. Answers the saved record. */
function put(action, path, body, what) {
  return action.run(async () => {
    try {
      return await api('PUT', path, body);
    } catch (failure) {
      throw new Error(`The ${what} was not saved. ${failure.message}`);
    }
  });
}

const emptyContact = { contact_id: '', display_name: '', phone: '', is_admin: false, email: '', notes: '' };

/** The add form, or the edit form of `editing` (a contact as listed; keyed by its id, so a new form starts from it). */
function ContactForm({ editing, onSaved, onCancel }) {
  const [draft, setDraft, set] = useDraft({ ...emptyContact, ...(editing || {}) });
  const action = useAction();
  async function submit(event) {
    event.preventDefault();
    const body = {
      contact_id: draft.contact_id || newContactId(),
      display_name: draft.display_name.trim(),
      phone: draft.phone.trim(),
      is_admin: draft.is_admin,
    };
    if (draft.email.trim()) body.email = draft.email.trim();
    if (draft.notes.trim()) body.notes = draft.notes.trim();
    const saved = await put(action, '/v1/contacts', body, 'contact');
    if (saved) {
      if (!editing) setDraft(emptyContact);
      await onSaved();
    }
  }
  return html`<form class="card form-grid" onSubmit=${submit} data-testid="contact-form">
    <h3>${editing ? `Edit ${editing.display_name}` : 'Add a contact'}</h3>
    <label for="contact-name">Name</label>
    <input id="contact-name" required maxlength="200" value=${draft.display_name} onInput=${set('display_name')} />
    <label for="contact-phone">Phone</label>
    <input id="contact-phone" required placeholder="+14155550100 (E.164: + and 8 to 15 digits)"
      value=${draft.phone} onInput=${set('phone')} />
    <label for="contact-admin">Admin</label>
    <span class="row"><input id="contact-admin" type="checkbox" checked=${draft.is_admin} onChange=${set('is_admin')} />
      <span class="muted">Calls and messages from this number count as yours.</span></span>
    <label for="contact-email">Email (optional)</label>
    <input id="contact-email" type="text" maxlength="254" value=${draft.email} onInput=${set('email')} />
    <label for="contact-notes">Notes (optional)</label>
    <textarea id="contact-notes" rows="2" maxlength="2000" value=${draft.notes} onInput=${set('notes')}></textarea>
    <div class="row">
      <button type="submit" disabled=${action.busy || !draft.display_name.trim() || !draft.phone.trim()}>
        ${editing ? 'Save contact' : 'Add contact'}</button>
      ${editing && html`<button type="button" class="secondary" onClick=${onCancel}>Cancel</button>`}
    </div>
    <${ErrorNote} error=${action.error} />
  </form>`;
}

function ContactRow({ c, onEdit, onChanged }) {
  const action = useAction();
  const remove = () =>
    action.run(async () => {
      await api('DELETE', `/v1/contacts/${encodeURIComponent(c.contact_id)}`);
      await onChanged();
    });
  return html`<tr data-testid="contact" data-id=${c.contact_id}>
    <td data-testid="contact-name">${c.display_name}${c.notes && html`<div class="muted description">${c.notes}</div>`}</td>
    <td class="mono" data-testid="contact-phone">${c.phone}</td>
    <td data-testid="contact-admin">${c.is_admin ? html`<span class="tag ok">Admin</span>` : ''}</td>
    <td data-testid="contact-email">${c.email || ''}</td>
    <td class="actions">
      <div class="row">
        <button class="secondary" data-testid="edit" onClick=${() => onEdit(c)}>Edit</button>
        <${ConfirmButton} label="Delete" question=${`Delete ${c.display_name}?`} testid="delete"
          disabled=${action.busy} onConfirm=${remove} />
      </div>
      <${ErrorNote} error=${action.error} />
    </td>
  </tr>`;
}

function Contacts({ list }) {
  const [editing, setEditing] = useState(null);
  const contacts = list.data?.contacts || [];
  const saved = async () => {
    setEditing(null);
    await list.reload();
  };
  return html`<section data-testid="contacts">
    <h2>Saved contacts</h2>
    <p class="muted">Agents with contact search see names and numbers only; emails and notes stay yours.</p>
    <${ErrorNote} error=${list.error} />
    ${list.loading && list.data === null && html`<${Loading} what="the contacts" />`}
    ${list.data && contacts.length === 0 && html`<p class="muted" data-testid="no-contacts">No saved contacts.</p>`}
    ${contacts.length > 0 && html`<table data-testid="contact-list">
      <thead><tr><th>Name</th><th>Phone</th><th>Admin</th><th>Email</th><th></th></tr></thead>
      <tbody>
        ${contacts.map((c) => html`<${ContactRow} key=${c.contact_id} c=${c} onEdit=${setEditing} onChanged=${list.reload} />`)}
      </tbody>
    </table>`}
    <${ContactForm} key=${editing ? editing.contact_id : ''} editing=${editing} onSaved=${saved} onCancel=${() => setEditing(null)} />
  </section>`;
}

function PhoneForm({ onSaved }) {
  const blank = { integration_id: '', provider: 'twilio', call_capable: true, connected: true, place_call_tool: '' };
  const [draft, setDraft, set] = useDraft(blank);
  const action = useAction();
  async function submit(event) {
    event.preventDefault();
    const body = { ...draft, integration_id: draft.integration_id.trim(), place_call_tool: draft.place_call_tool.trim() };
    const saved = await put(action, '/v1/phones', body, 'phone integration');
    if (saved) {
      setDraft(blank);
      await onSaved();
    }
  }
  return html`<form class="card form-grid" onSubmit=${submit} data-testid="phone-form">
    <h3>Add a phone integration</h3>
    <label for="phone-id">Integration id</label>
    <input id="phone-id" required placeholder="e.g. main-line ([a-z0-9_-])" value=${draft.integration_id}
      onInput=${set('integration_id')} />
    <label for="phone-provider">Provider</label>
    <select id="phone-provider" value=${draft.provider} onChange=${set('provider')}>
      <option value="twilio">Twilio</option>
      <option value="telnyx">Telnyx</option>
    </select>
    <label for="phone-call-capable">Can place calls</label>
    <input id="phone-call-capable" type="checkbox" checked=${draft.call_capable} onChange=${set('call_capable')} />
    <label for="phone-connected">Connected</label>
    <input id="phone-connected" type="checkbox" checked=${draft.connected} onChange=${set('connected')} />
    <label for="phone-tool">Place-call tool</label>
    <input id="phone-tool" placeholder="the tool's name, e.g. place_call" value=${draft.place_call_tool}
      onInput=${set('place_call_tool')} />
    <div><button type="submit" disabled=${action.busy || !draft.integration_id.trim()}>Add integration</button></div>
    <${ErrorNote} error=${action.error} />
  </form>`;
}

function PhoneRow({ p, onChanged }) {
  const action = useAction();
  const remove = () =>
    action.run(async () => {
      await api('DELETE', `/v1/phones/${encodeURIComponent(p.integration_id)}`);
      await onChanged();
    });
  const yes = (flag, text) => (flag ? html`<span class="ok">${text}</span>` : html`<span class="muted">no</span>`);
  return html`<tr data-testid="phone" data-id=${p.integration_id}>
    <td class="mono">${p.integration_id}</td>
    <td>${p.provider === 'telnyx' ? 'Telnyx' : p.provider === 'twilio' ? 'Twilio' : p.provider}</td>
    <td data-testid="phone-call-capable">${yes(p.call_capable, 'yes')}</td>
    <td data-testid="phone-connected">${yes(p.connected, 'connected')}</td>
    <td class="mono">${p.place_call_tool || '—'}</td>
    <td class="actions">
      <${ConfirmButton} label="Delete" question="Delete this integration? Its place-call tool stops working."
        testid="delete-phone" disabled=${action.busy} onConfirm=${remove} />
      <${ErrorNote} error=${action.error} />
    </td>
  </tr>`;
}

function Phones({ list }) {
  const phones = list.data?.phones || [];
  return html`<section data-testid="phones">
    <h2>Phone integrations</h2>
    <p class="muted">A connected integration that can place calls brings its place-call tool to the Tools page.</p>
    <${ErrorNote} error=${list.error} />
    ${list.loading && list.data === null && html`<${Loading} what="the phone integrations" />`}
    ${list.data && phones.length === 0 && html`<p class="muted" data-testid="no-phones">No phone integrations.</p>`}
    ${phones.length > 0 && html`<table data-testid="phone-list">
      <thead><tr><th>Id</th><th>Provider</th><th>Calls</th><th>Connected</th><th>Place-call tool</th><th></th></tr></thead>
      <tbody>${phones.map((p) => html`<${PhoneRow} key=${p.integration_id} p=${p} onChanged=${list.reload} />`)}</tbody>
    </table>`}
    <${PhoneForm} onSaved=${list.reload} />
  </section>`;
}

export default function ContactsPage({ ready }) {
  const contacts = useLoad(() => api('GET', '/v1/contacts'), []);
  const phones = useLoad(() => api('GET', '/v1/phones'), []);
  const loaded = contacts.data !== null || contacts.error !== null;
  useEffect(() => {
    if (loaded) ready();
  }, [loaded]);
  return html`<section data-testid="contacts-page">
    <h1>Contacts</h1>
    <${Contacts} list=${contacts} />
    <${Phones} list=${phones} />
  </section>`;
}
