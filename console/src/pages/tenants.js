// Tenants (operator): every tenant (GET /v1/admin/tenants), a form to create
// one, and the selected tenant's tokens (#/tenants/<tenant id>): issue one
// (its secret shown once, with a copy button) and revoke after a second click.
import { api } from '../api.js';
import { ConfirmButton, CopyButton, ErrorNote, Loading, html, useAction, useEffect, useLoad, useState, when } from '../lib.js';

const adminTenants = '/v1/admin/tenants';

function CreateTenant({ onCreated }) {
  const [name, setName] = useState('');
  const action = useAction();
  const submit = (event) => {
    event.preventDefault();
    action.run(async () => {
      const made = await api('POST', adminTenants, { name: name.trim() });
      setName('');
      onCreated(made);
    });
  };
  return html`<form class="row" onSubmit=${submit}>
    <label for="tenant-name">New tenant</label>
    <input id="tenant-name" data-testid="tenant-name" maxlength="200" placeholder="Name" value=${name}
      onInput=${(e) => setName(e.currentTarget.value)} />
    <button type="submit" data-testid="create-tenant" disabled=${action.busy || !name.trim()}>Create</button>
    <${ErrorNote} error=${action.error} />
  </form>`;
}

/** A token just issued: its secret, shown this once. */
function Issued({ issued, onDismiss }) {
  return html`<div class="card" data-testid="issued">
    <p><strong>New token${issued.label ? ` "${issued.label}"` : ''}.</strong> Copy it now: it is not shown again
      (the node keeps only its hash).</p>
    <div class="row">
      <code class="secret" data-testid="issued-token">${issued.token}</code>
      <${CopyButton} text=${issued.token} testid="copy-token" />
      <button class="link" onClick=${onDismiss}>Done</button>
    </div>
  </div>`;
}

function Tokens({ tenant }) {
  const base = `${adminTenants}/${encodeURIComponent(tenant.tenant_id)}/tokens`;
  const tokens = useLoad(() => api('GET', base), [base]);
  const [label, setLabel] = useState('');
  const [issued, setIssued] = useState(null);
  const action = useAction();
  const issue = (event) => {
    event.preventDefault();
    action.run(async () => {
      const made = await api('POST', base, label.trim() ? { label: label.trim() } : {});
      setLabel('');
      setIssued(made);
      await tokens.reload();
    });
  };
  const revoke = (id) =>
    action.run(async () => {
      await api('DELETE', `${base}/${encodeURIComponent(id)}`);
      await tokens.reload();
    });
  return html`<section class="card" data-testid="tokens">
    <h2>Tokens of ${tenant.name}</h2>
    <form class="row" onSubmit=${issue}>
      <label for="token-label">Label</label>
      <input id="token-label" data-testid="token-label" maxlength="200" placeholder="optional" value=${label}
        onInput=${(e) => setLabel(e.currentTarget.value)} />
      <button type="submit" data-testid="issue-token" disabled=${action.busy}>Issue token</button>
    </form>
    ${issued && html`<${Issued} issued=${issued} onDismiss=${() => setIssued(null)} />`}
    <${ErrorNote} error=${action.error || tokens.error} />
    ${tokens.loading && tokens.data === null && html`<${Loading} what="the tokens" />`}
    ${tokens.data && html`<table>
      <thead><tr><th>Token</th><th>Label</th><th>Issued</th><th>State</th><th></th></tr></thead>
      <tbody>
        ${tokens.data.map((t) => html`<tr data-testid="token" data-id=${t.token_id} data-revoked=${t.revoked ? '1' : '0'}>
          <td class="mono">${t.token_id}</td>
          <td>${t.label || html`<span class="muted">—</span>`}</td>
          <td>${when(t.created_us)}</td>
          <td class=${t.revoked ? 'denied' : 'allowed'}>${t.revoked ? 'Revoked' : 'Live'}</td>
          <td class="actions">${!t.revoked && html`<${ConfirmButton} label="Revoke" testid="revoke"
            question="Revoke it? Whoever holds it is signed out at once." disabled=${action.busy}
            onConfirm=${() => revoke(t.token_id)} />`}</td>
        </tr>`)}
      </tbody>
    </table>`}
  </section>`;
}

export default function Tenants({ rest, ready }) {
  const list = useLoad(() => api('GET', adminTenants), []);
  const loaded = list.data !== null || list.error !== null;
  useEffect(() => {
    if (loaded) ready();
  }, [loaded]);
  const selectedId = rest && rest[0] ? decodeURIComponent(rest[0]) : '';
  const tenants = list.data || [];
  const selected = tenants.find((t) => t.tenant_id === selectedId);
  const created = async (tenant) => {
    await list.reload();
    location.hash = `#/tenants/${encodeURIComponent(tenant.tenant_id)}`;
  };

  return html`<section>
    <h1>Tenants</h1>
    <${CreateTenant} onCreated=${created} />
    <${ErrorNote} error=${list.error} />
    ${list.loading && list.data === null && html`<${Loading} what="the tenants" />`}
    ${list.data && html`<table data-testid="tenants">
      <thead><tr><th>Name</th><th>Tenant</th><th>Created</th></tr></thead>
      <tbody>
        ${tenants.map((t) => html`<tr data-testid="tenant" data-id=${t.tenant_id}
            class=${t.tenant_id === selectedId ? 'selected' : ''}>
          <td><a href=${`#/tenants/${encodeURIComponent(t.tenant_id)}`}>${t.name}</a></td>
          <td class="mono">${t.tenant_id}</td>
          <td>${when(t.created_us)}</td>
        </tr>`)}
      </tbody>
    </table>`}
    ${list.data && tenants.length === 0 && html`<p class="muted">No tenants yet.</p>`}
    ${selectedId && list.data && !selected && html`<p class="error" data-testid="error">No tenant ${selectedId} on this node.</p>`}
    ${selected && html`<${Tokens} key=${selected.tenant_id} tenant=${selected} />`}
  </section>`;
}
