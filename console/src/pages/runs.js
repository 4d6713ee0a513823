// Runs: the account's recent runs (GET /v1/runs, polled every 2 s) and one
// run opened (#/runs/<run id>): its snapshot (the tools granted in its view,
// GET /v1/runs/{run}), its live tool activity (the SSE stream
// /v1/runs/{run}/events: rounds, waves, each call's status and duration),
// and the execution decisions the audit recorded for it.
//
// The stream carries only what happens while the page listens: the node does
// not replay a run's past activity to a later subscriber, and a run that has
// ended has no stream. For those, the page says so and shows what the node
// persisted: the snapshot and the audit's execution decisions.
import { api, follow } from '../api.js';
import { duration, ErrorNote, html, Loading, missingRoute, reasonText, usePoll, useEffect, useState, when } from '../lib.js';

const pollMs = 2000;
const runPath = (id) => `/v1/runs/${encodeURIComponent(id)}`;

const stateWords = { live: 'Live', finished: 'Finished', cancelled: 'Cancelled', interrupted: 'Interrupted (the node stopped)' };

function RunList({ selected, ready }) {
  const runs = usePoll(() => api('GET', '/v1/runs?limit=50'), pollMs);
  const first = Boolean(runs.data || runs.error);
  useEffect(() => {
    if (first) ready();
  }, [first]);
  if (runs.error && missingRoute(runs.error)) return html`<${OpenById} />`;
  if (runs.error && !runs.data) return html`<${ErrorNote} error=${runs.error} />`;
  if (!runs.data) return html`<${Loading} what="runs" />`;
  const list = runs.data.runs;
  if (list.length === 0) return html`<p class="muted" data-testid="no-runs">No runs yet. An agent host starts one with POST /v1/runs.</p>`;
  return html`<table data-testid="run-list">
    <thead><tr><th>Run</th><th>Agent</th><th>Channel</th><th>Started</th><th>State</th></tr></thead>
    <tbody>${list.map((run) => html`<tr key=${run.run_id} data-run=${run.run_id}
      aria-selected=${run.run_id === selected ? 'true' : undefined}>
      <td><a class="mono" href=${`#/runs/${encodeURIComponent(run.run_id)}`}>${run.run_id}</a></td>
      <td class="mono">${run.agent_id}</td>
      <td>${run.channel.replace(/_/g, ' ')}</td>
      <td>${when(run.started_us)}</td>
      <td data-testid="run-state">${stateWords[run.state] || run.state}${run.ended_us ? ` · ${when(run.ended_us)}` : ''}</td>
    </tr>`)}</tbody>
  </table>
  ${runs.error && html`<${ErrorNote} error=${runs.error} />`}`;
}

/** An older node lists no runs: a run is opened by its id. */
function OpenById() {
  const [id, setId] = useState('');
  return html`<form class="row" data-testid="open-run" onSubmit=${(e) => {
    e.preventDefault();
    location.hash = `#/runs/${encodeURIComponent(id.trim())}`;
  }}>
    <span class="muted">This node does not list runs (GET /v1/runs); open one by its id:</span>
    <input aria-label="Run id" placeholder="run id" value=${id} onInput=${(e) => setId(e.currentTarget.value)} />
    <button type="submit" disabled=${!id.trim()}>Open</button>
  </form>`;
}

function Snapshot({ runId }) {
  const [run, setRun] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    api('GET', runPath(runId)).then(setRun, setError);
  }, [runId]);
  if (error) return html`<${ErrorNote} error=${error} />`;
  if (!run) return html`<${Loading} what="the run's snapshot" />`;
  const snapshot = run.snapshot || {};
  const tools = snapshot.tools || [];
  const routes = snapshot.routes || [];
  return html`<section class="card" data-testid="snapshot">
    <h3>Snapshot</h3>
    <p class="muted">
      Agent <span class="mono">${snapshot.agent_id}</span> · ${(snapshot.chan || '').replace(/_/g, ' ')} · composed ${when(snapshot.created_us)} · fixed for the run’s life</p>
    <table>
      <thead><tr><th>Tool granted in the view</th><th>Origin</th><th>Server</th><th>Risk</th><th>Marks</th></tr></thead>
      <tbody>${tools.map((t) => html`<tr key=${`${t.server_id}/${t.name}`} data-tool=${t.name}>
        <td class="mono">${t.name}</td><td>${t.origin}</td><td class="mono">${t.server_id || '—'}</td><td>${t.risk}</td>
        <td>${t.read_only ? 'read-only' : t.mutating ? 'changes things' : ''}${t.route_action ? ` · serves ${t.route_action}` : ''}</td>
      </tr>`)}</tbody>
    </table>
    ${routes.map((r) => html`<p key=${r.action} data-testid="snapshot-route">
      <span class="mono">${r.action}</span>: ${r.mode}, ${r.tool ? html`served by <span class="mono">${r.tool}</span>` : 'no implementation'}</p>`)}
  </section>`;
}

/** Folds one activity event into the rounds seen so far. */
function fold(rounds, event) {
  const next = new Map(rounds);
  const round = { ...(next.get(event.round) || { round: event.round, calls: [], waves: 0, answered: false }) };
  if (event.event === 'round') round.calls = event.calls.map((c) => ({ ...c }));
  if (event.event === 'wave') {
    round.waves += 1;
    round.calls = round.calls.map((c) => (event.calls.includes(c.call_id) ? { ...c, wave: round.waves, sent: true } : c));
  }
  if (event.event === 'call') {
    const known = round.calls.some((c) => c.call_id === event.call_id);
    const settled = { call_id: event.call_id, status: event.status, reason: event.reason, us: event.us };
    round.calls = known
      ? round.calls.map((c) => (c.call_id === event.call_id ? { ...c, ...settled } : c))
      : [...round.calls, settled];
  }
  if (event.event === 'answered') round.answered = true;
  next.set(event.round, round);
  return next;
}

function callStatus(call) {
  if (call.status === 'pending') return call.sent ? 'in flight' : 'waiting';
  return call.status.replace(/_/g, ' ');
}

function Activity({ runId }) {
  const [rounds, setRounds] = useState(new Map());
  const [stream, setStream] = useState({ state: 'connecting' });
  useEffect(() => {
    setRounds(new Map());
    setStream({ state: 'connecting' });
    const stop = follow(`${runPath(runId)}/events`, (type, data) => {
      if (type === 'open') setStream({ state: 'live' });
      else if (type === 'activity') setRounds((all) => fold(all, data)); else if (type === 'end') setStream({ state: 'ended', reason: data && data.reason });
      else if (type === 'error') setStream({ state: 'unavailable', status: data && data.status });
      else if (type === 'closed') setStream((s) => (s.state === 'ended' ? s : { state: 'closed' }));
    });
    return stop;
  }, [runId]);
  const list = [...rounds.values()].sort((a, b) => a.round - b.round);
  return html`<section class="card" data-testid="activity">
    <h3>Live tool activity</h3>
    <p data-testid="stream-state" class="muted">${streamWords(stream)}</p>
    ${list.map((round) => html`<div key=${round.round} data-testid="round" data-round=${round.round}>
      <h4>Round ${round.round} · ${round.waves} wave${round.waves === 1 ? '' : 's'}${round.answered ? ' · answered' : ' · in progress'}</h4>
      <table>
        <thead><tr><th>Call</th><th>Tool</th><th>Wave</th><th>Status</th><th>Duration</th><th>Reason</th></tr></thead>
        <tbody>${round.calls.map((c) => html`<tr key=${c.call_id} data-call=${c.call_id}>
          <td class="mono">${c.call_id}</td>
          <td class="mono">${c.tool || c.name || ''}</td>
          <td>${c.wave || '—'}</td>
          <td data-testid="call-status" class=${c.status === 'ok' ? 'ok' : c.status === 'pending' ? '' : 'bad'}>${callStatus(c)}</td>
          <td>${c.us != null ? duration(c.us) : '—'}</td>
          <td>${c.reason ? reasonText(c.reason) : ''}</td>
        </tr>`)}</tbody>
      </table>
    </div>`)}
  </section>`;
}

function streamWords(stream) {
  switch (stream.state) {
    case 'connecting':
      return 'Connecting to the run’s activity stream…';
    case 'live':
      return 'Following this run live. Rounds from before you opened it are not replayed: see the recorded decisions below.';
    case 'ended':
      // "ended" is a normal end (finished); anything else names why it stopped.
      return !stream.reason || stream.reason === 'ended' ? 'The run ended.' : `The run stopped: ${stream.reason}.`;
    case 'closed':
      return 'The activity stream closed.';
    default:
      if (stream.status === 404)
        return 'This run is no longer live, so it has no activity stream (the node does not replay a run’s past activity). What it recorded is shown below.';
      if (stream.status === 429 || stream.status === 503)
        return 'Too many activity streams are open for this account right now; close another run’s page and reload.';
      if (stream.status === 401) return 'Your sign-in is no longer valid. Sign in again.';
      return 'The activity stream is not available right now; reload to try again.';
  }
}

/** What the audit recorded for this run: each call's execution decision. */
function Recorded({ runId }) {
  const audit = usePoll(() => api('GET', '/v1/audit?limit=1000'), pollMs * 2);
  if (audit.error) return html`<${ErrorNote} error=${audit.error} />`;
  if (!audit.data) return null;
  const rows = (Array.isArray(audit.data) ? audit.data : audit.data.rows || [])
    .filter((row) => row.run_id === runId && row.phase === 'execute');
  return html`<section class="card" data-testid="recorded">
    <h3>Recorded execution decisions</h3>
    ${rows.length === 0
      ? html`<p class="muted">No calls recorded for this run yet.</p>`
      : html`<table>
        <thead><tr><th>Tool</th><th>Server</th><th>Decision</th></tr></thead>
        <tbody>${rows.map((row, idx) => html`<tr key=${idx}>
          <td class="mono">${row.tool}</td><td class="mono">${row.server_id || '—'}</td><td>${reasonText(row.reason)}</td>
        </tr>`)}</tbody>
      </table>`}
  </section>`;
}

export default function RunsPage({ rest, ready }) {
  const selected = rest && rest[0] ? decodeURIComponent(rest[0]) : null;
  return html`<div data-testid="runs-page">
    <h1>Runs</h1>
    <${RunList} selected=${selected} ready=${ready} />
    ${selected && html`<div key=${selected} data-testid="run-detail">
      <h2>Run <span class="mono">${selected}</span></h2>
      <${Activity} runId=${selected} />
      <${Snapshot} runId=${selected} />
      <${Recorded} runId=${selected} />
    </div>`}
  </div>`;
}
