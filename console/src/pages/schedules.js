// Schedules: the owner's schedules (made by an agent's create_agent_schedule
// in a chat), oldest first as the API lists them (GET /v1/schedules), with
// their state and when each is next due, in the schedule's own time zone and
// in UTC; Pause, Resume, and Delete after a second click.
import { api } from '../api.js';
import { ConfirmButton, ErrorNote, Loading, html, seconds, useAction, useEffect, useLoad, when } from '../lib.js';

/** "once", or "every 2 h" (the stored timing: kind, every_s, first_*_s, zone). */
function timing(t) {
  if (!t || typeof t !== 'object') return String(t ?? '');
  if (t.kind === 'interval') return `every ${seconds(t.every_s)}`;
  return t.kind || '';
}

/** An ISO time spaced for reading: "2026-12-05T10:00:00+01:00" → "2026-12-05 10:00:00 +01:00". */
function iso(text) {
  if (!text) return '—';
  return text.replace('T', ' ').replace(/([+-]\d\d:\d\d|Z)$/, ' $1');
}

function Schedule({ s, agentName, onChanged }) {
  const action = useAction();
  const act = (method, path) =>
    action.run(async () => {
      await api(method, path);
      onChanged();
    });
  const base = `/v1/schedules/${encodeURIComponent(s.schedule_id)}`;
  const active = s.state === 'active';
  return html`<tr data-testid="schedule" data-id=${s.schedule_id} data-state=${s.state}>
    <td><strong>${s.task_name}</strong><div class="muted">${s.instruction}</div></td>
    <td>${agentName(s.agent_id)}</td>
    <td>${timing(s.timing)}</td>
    <td data-testid="schedule-state" class=${active ? 'allowed' : 'muted'}>${active ? 'Active' : 'Paused'}</td>
    <td data-testid="next-due">
      ${s.next_due_local
        ? html`<div>${iso(s.next_due_local)} <span class="muted">${s.timezone}</span></div>
            <div class="muted">${iso(s.next_due_utc)}</div>`
        : html`<span class="muted">${active ? 'not due again' : 'paused'}</span>`}
    </td>
    <td>${s.last_fired_s ? when(s.last_fired_s * 1_000_000) : '—'}</td>
    <td class="actions">
      <div class="row">
        ${active
          ? html`<button class="secondary" data-testid="pause" disabled=${action.busy} onClick=${() => act('POST', `${base}/pause`)}>Pause</button>`
          : html`<button class="secondary" data-testid="resume" disabled=${action.busy} onClick=${() => act('POST', `${base}/resume`)}>Resume</button>`}
        <${ConfirmButton} label="Delete" question="Delete this schedule? Turns already queued still run."
          testid="delete" disabled=${action.busy} onConfirm=${() => act('DELETE', base)} />
      </div>
      <${ErrorNote} error=${action.error} />
    </td>
  </tr>`;
}

export default function Schedules({ ready }) {
  const agents = useLoad(() => api('GET', '/v1/agents'), []);
  const list = useLoad(() => api('GET', '/v1/schedules'), []);
  const loaded = list.data !== null || list.error !== null;
  useEffect(() => {
    if (loaded) ready();
  }, [loaded]);
  const names = new Map((agents.data || []).map((a) => [a.agent_id, a.name]));
  const agentName = (id) => names.get(id) || id;
  const schedules = list.data?.schedules || [];

  return html`<section>
    <h1>Schedules</h1>
    <p class="muted">An agent makes a schedule when you ask it to in a chat; each occurrence runs as a turn in
      that chat. A resumed schedule runs next at its first occurrence after now: nothing missed while paused runs.</p>
    <div class="toolbar"><button class="secondary" onClick=${list.reload} disabled=${list.loading}>Refresh</button></div>
    <${ErrorNote} error=${list.error || agents.error} />
    ${list.loading && list.data === null && html`<${Loading} what="the schedules" />`}
    ${list.data && schedules.length === 0 && html`<p class="muted" data-testid="no-schedules">No schedules.</p>`}
    ${schedules.length > 0 && html`<table data-testid="schedules">
      <thead><tr><th>Task</th><th>Agent</th><th>Timing</th><th>State</th><th>Next due (local, then UTC)</th>
        <th>Last ran</th><th></th></tr></thead>
      <tbody>
        ${schedules.map((s) => html`<${Schedule} key=${s.schedule_id} s=${s} agentName=${agentName} onChanged=${list.reload} />`)}
      </tbody>
    </table>`}
  </section>`;
}
