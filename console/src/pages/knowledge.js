// Knowledge: what the agents asked to remember or learn (memories, skills,
// archives, diagnostics), waiting for the owner's review
// (GET /v1/knowledge/candidates), with Confirm and Reject; the ones decided;
// and the account's automatic-saving consent (PUT /v1/knowledge/consent).
import { api } from '../api.js';
import { ErrorNote, Loading, html, useAction, useEffect, useLoad, when } from '../lib.js';

/** How many decided candidates the page shows (the API answers at most 1,000). */
const decidedShown = 50;

const kinds = { memory: 'Memory', skill: 'Skill', archive: 'Archive', diagnostic: 'Diagnostic' };

function Field({ label, value, mono }) {
  if (value == null || value === '') return null;
  return html`<dt>${label}</dt><dd class=${mono ? 'mono' : ''}>${String(value)}</dd>`;
}

function Candidate({ candidate, agentName, onDecided }) {
  const action = useAction();
  const decide = (verdict) =>
    action.run(async () => {
      await api('POST', `/v1/knowledge/candidates/${encodeURIComponent(candidate.id)}/${verdict}`);
      onDecided();
    });
  const pending = candidate.status === 'pending';
  return html`<article class="card" data-testid="candidate" data-id=${candidate.id} data-status=${candidate.status}>
    <div class="row">
      <span class="tag">${kinds[candidate.kind] || candidate.kind}</span>
      <strong>${candidate.title || candidate.target || '(untitled)'}</strong>
      ${!pending && html`<span class=${candidate.status === 'confirmed' || candidate.status === 'applied' ? 'allowed' : 'denied'}
        data-testid="candidate-status">${candidate.status}</span>`}
    </div>
    ${candidate.content && html`<p data-testid="candidate-content">${candidate.content}</p>`}
    <dl class="figures">
      <${Field} label="Description" value=${candidate.description} />
      <${Field} label="Why" value=${candidate.rationale} />
      <${Field} label="Target" value=${candidate.target} mono />
      <${Field} label="Agent" value=${agentName(candidate.agent_id)} />
      <${Field} label="From" value=${[candidate.source, candidate.tool].filter(Boolean).join(' · ')} />
      <${Field} label="Run" value=${candidate.run_id} mono />
      <${Field} label="Submitted" value=${when(candidate.submitted_us)} />
      ${!pending && html`<${Field} label="Decided" value=${`${when(candidate.decided_us)}${candidate.decided_by ? ` by ${candidate.decided_by}` : ''}`} />`}
    </dl>
    ${pending && html`<div class="row">
      <button data-testid="confirm" disabled=${action.busy} onClick=${() => decide('confirm')}>Confirm</button>
      <button class="secondary" data-testid="reject" disabled=${action.busy} onClick=${() => decide('reject')}>Reject</button>
    </div>`}
    <${ErrorNote} error=${action.error} />
  </article>`;
}

function Consent({ on, onChanged }) {
  const action = useAction();
  const toggle = (event) => {
    const want = event.currentTarget.checked;
    action.run(async () => {
      await api('PUT', '/v1/knowledge/consent', { automatic_saving: want });
      onChanged();
    });
  };
  return html`<div class="card">
    <label class="row">
      <input type="checkbox" data-testid="consent" checked=${on} disabled=${action.busy} onChange=${toggle} />
      Save automatically
    </label>
    <p class="muted">While on, what an agent proposes is applied at once when it passes the account's policy,
      without waiting here. Off: everything waits for your review.</p>
    <${ErrorNote} error=${action.error} />
  </div>`;
}

export default function Knowledge({ ready }) {
  const agents = useLoad(() => api('GET', '/v1/agents'), []);
  const pending = useLoad(() => api('GET', '/v1/knowledge/candidates?status=pending&limit=1000'), []);
  const decided = useLoad(() => api('GET', `/v1/knowledge/candidates?status=decided&limit=${decidedShown}`), []);
  const loaded = pending.data !== null || pending.error !== null;
  useEffect(() => {
    if (loaded) ready();
  }, [loaded]);
  const names = new Map((agents.data || []).map((a) => [a.agent_id, a.name]));
  const agentName = (id) => (id ? names.get(id) || id : '');
  const reload = () => Promise.all([pending.reload(), decided.reload()]);

  return html`<section>
    <h1>Knowledge</h1>
    <${ErrorNote} error=${pending.error || agents.error} />
    ${pending.data && html`<${Consent} on=${pending.data.automatic_saving} onChanged=${pending.reload} />`}
    <h2>Waiting for review ${pending.data && html`<span class="tag" data-testid="pending-count">${pending.data.pending}</span>`}</h2>
    ${pending.loading && pending.data === null && html`<${Loading} what="the candidates" />`}
    ${pending.data && pending.data.candidates.length === 0 && html`<p class="muted" data-testid="none-pending">Nothing waits for review.</p>`}
    <div data-testid="pending">
      ${(pending.data?.candidates || []).map((c) => html`<${Candidate} key=${c.id} candidate=${c} agentName=${agentName} onDecided=${reload} />`)}
    </div>
    <h2>Decided</h2>
    <${ErrorNote} error=${decided.error} />
    ${decided.data && decided.data.candidates.length === 0 && html`<p class="muted">None yet.</p>`}
    <div data-testid="decided">
      ${(decided.data?.candidates || []).map((c) => html`<${Candidate} key=${c.id} candidate=${c} agentName=${agentName} onDecided=${reload} />`)}
    </div>
  </section>`;
}
