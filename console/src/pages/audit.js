// Audit: the tenant's allow and deny decisions (GET /v1/audit), newest first,
// filterable by agent, tool, phase and decision. The filters go to the node as
// query parameters (agent_id, tool, phase; a node that does not take them
// answers every row) and are applied here too, so the page shows the same
// rows either way. The selects offer every value seen since the page opened.
import { api } from '../api.js';
import { ErrorNote, FilterSelect, Loading, html, reasonText, useEffect, useLoad, useRef, useState, when } from '../lib.js';

/** Reasons that allow (actors/tenant/policy.hpp); every other reason denies. */
const allowing = new Set(['explicit_grant', 'default_grant', 'platform_default']);

const phases = { compose: 'run start (compose)', execute: 'call (execute)', config: 'change (config)' };
const limits = [100, 500, 2000];

/** 'allowed' or 'denied' (a refused change is denied). */
function decision(row) {
  return row.phase !== 'config' && allowing.has(row.reason) ? 'allowed' : 'denied';
}

/** What the row is about: the tool, or the refused change's operation. */
function subject(row) {
  return row.tool || row.op || '';
}

function matches(row, filter) {
  return (
    (!filter.agent || row.agent_id === filter.agent) &&
    (!filter.tool || subject(row) === filter.tool) &&
    (!filter.phase || row.phase === filter.phase) &&
    (!filter.decision || decision(row) === filter.decision)
  );
}

function query(filter, limit) {
  const q = new URLSearchParams({ limit: String(limit) });
  if (filter.agent) q.set('agent_id', filter.agent);
  if (filter.tool) q.set('tool', filter.tool);
  if (filter.phase) q.set('phase', filter.phase);
  return `/v1/audit?${q}`;
}

/** The values seen so far for each select, so a filtered answer does not shrink them. */
function useSeen(rows) {
  const seen = useRef({ agent: new Set(), tool: new Set(), phase: new Set() });
  for (const row of rows || []) {
    if (row.agent_id) seen.current.agent.add(row.agent_id);
    if (subject(row)) seen.current.tool.add(subject(row));
    if (row.phase) seen.current.phase.add(row.phase);
  }
  const sorted = (set) => [...set].sort();
  return { agent: sorted(seen.current.agent), tool: sorted(seen.current.tool), phase: sorted(seen.current.phase) };
}

export default function Audit({ ready }) {
  const [filter, setFilter] = useState({ agent: '', tool: '', phase: '', decision: '' });
  const [limit, setLimit] = useState(limits[0]);
  const agents = useLoad(() => api('GET', '/v1/agents'), []);
  const audit = useLoad(() => api('GET', query(filter, limit)), [filter.agent, filter.tool, filter.phase, limit]);
  const seen = useSeen(audit.data);
  const loaded = audit.data !== null || audit.error !== null;
  useEffect(() => {
    if (loaded) ready();
  }, [loaded]);

  const names = new Map((agents.data || []).map((a) => [a.agent_id, a.name]));
  const agentName = (id) => names.get(id) || id || '—';
  const rows = (audit.data || [])
    .filter((row) => matches(row, filter))
    .sort((a, b) => (b.time_us || 0) - (a.time_us || 0));
  const set = (key) => (value) => setFilter((f) => ({ ...f, [key]: value }));

  return html`<section>
    <h1>Audit</h1>
    <p class="muted">Every decision about a tool: when a run starts (which tools it gets), when a call is
      checked, and every refused change to the account's tools.</p>
    <div class="toolbar">
      <${FilterSelect} id="filter-agent" label="Agent" value=${filter.agent} onChange=${set('agent')}
        options=${seen.agent.map((id) => [id, agentName(id)])} />
      <${FilterSelect} id="filter-tool" label="Tool" value=${filter.tool} onChange=${set('tool')}
        options=${seen.tool.map((t) => [t, t])} />
      <${FilterSelect} id="filter-phase" label="Phase" value=${filter.phase} onChange=${set('phase')}
        options=${seen.phase.map((p) => [p, phases[p] || p])} />
      <${FilterSelect} id="filter-decision" label="Decision" value=${filter.decision} onChange=${set('decision')}
        options=${[['allowed', 'Allowed'], ['denied', 'Denied']]} />
      <span class="filter">
        <label for="audit-limit">Newest</label>
        <select id="audit-limit" value=${limit} onChange=${(e) => setLimit(Number(e.currentTarget.value))}>
          ${limits.map((n) => html`<option value=${n}>${n}</option>`)}
        </select>
      </span>
      <button class="secondary" onClick=${audit.reload} disabled=${audit.loading}>Refresh</button>
    </div>
    <${ErrorNote} error=${audit.error || agents.error} />
    ${audit.loading && audit.data === null && html`<${Loading} what="the audit" />`}
    ${audit.data !== null && html`<p class="muted" data-testid="audit-count">
      ${rows.length} of ${audit.data.length} decisions shown</p>`}
    ${audit.data !== null && html`<table data-testid="audit">
      <thead><tr><th>When</th><th>Decision</th><th>Phase</th><th>Agent</th><th>Tool</th><th>Server</th>
        <th>Why</th><th>Run</th><th>Channel</th></tr></thead>
      <tbody>
        ${rows.map((row) => html`<tr data-testid="audit-row" data-decision=${decision(row)}
            data-phase=${row.phase} data-tool=${subject(row)} data-agent=${row.agent_id || ''}>
          <td>${when(row.time_us)}</td>
          <td class=${decision(row)}>${decision(row) === 'allowed' ? 'Allowed' : 'Denied'}</td>
          <td>${row.phase}</td>
          <td>${row.agent_id ? agentName(row.agent_id) : '—'}</td>
          <td class="mono">${subject(row)}</td>
          <td class="mono">${row.server_id || (row.phase === 'config' ? '' : 'internal')}</td>
          <td title=${row.reason || ''}>${reasonText(row.reason) || row.code || ''}</td>
          <td class="mono">${row.run_id || ''}</td>
          <td>${row.channel || ''}</td>
        </tr>`)}
      </tbody>
    </table>`}
    ${audit.data !== null && rows.length === 0 && html`<p class="muted">No decisions match.</p>`}
  </section>`;
}
