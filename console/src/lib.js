// What every page shares: `html` (htm bound to preact), the hooks, and small
// components for loading, errors and tables. Everything a page shows from the
// API goes through preact's text nodes and attributes, never innerHTML, so
// a server label or tool description holding markup is shown as text.
import { h, render } from './vendor/preact.js';
import { useCallback, useEffect, useRef, useState } from './vendor/hooks.js';
import htm from './vendor/htm.js';
import { api } from './api.js';

export const html = htm.bind(h);
export { render, useCallback, useEffect, useRef, useState };

/**
 * Loads `load()` (a promise) on mount and when `deps` change:
 * { data, error, loading, reload }.
 */
export function useLoad(load, deps = []) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const reload = useCallback(() => {
    setState((s) => ({ ...s, loading: true }));
    return load().then(
      (data) => setState({ data, error: null, loading: false }),
      (error) => setState({ data: null, error, loading: false }),
    );
  }, deps);
  useEffect(() => {
    reload();
  }, [reload]);
  return { ...state, reload };
}

/** An error shown in words (ApiError.message is already written for a person). */
export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert" data-testid="error">${error.message || String(error)}</p>`;
}

export function Loading({ what }) {
  return html`<p class="muted">Loading ${what}…</p>`;
}

/** Microseconds since the epoch as a local date and time. */
export function when(us) {
  if (!us) return '—';
  return new Date(Math.floor(us / 1000)).toLocaleString();
}

/** A duration in microseconds as µs, ms or s. */
export function duration(us) {
  if (us == null) return '—';
  if (us < 1000) return `${us} µs`;
  if (us < 1_000_000) return `${(us / 1000).toFixed(1)} ms`;
  return `${(us / 1_000_000).toFixed(2)} s`;
}

// -- shared by the Audit, Knowledge, Schedules, Node and Tenants pages --------

/** Calls `tick()` now and every `ms` while mounted (skipped while the tab is hidden). */
export function useEvery(tick, ms) {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    let stopped = false;
    const run = () => {
      if (!stopped && document.visibilityState !== 'hidden') latest.current();
    };
    run();
    const timer = setInterval(run, ms);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [ms]);
}

/**
 * An action a button starts: `run(promise-returning fn)` keeps `busy` while it
 * runs and `error` (an ApiError in words) when it fails. Answers
 * { run, busy, error, clear }.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = useCallback(async (work) => {
    setBusy(true);
    setError(null);
    try {
      return await work();
    } catch (failure) {
      setError(failure);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { run, busy, error, clear: () => setError(null) };
}

/**
 * A destructive button that asks once more in place ("Delete" → "Really
 * delete?" with Yes and Cancel) instead of a browser dialog.
 */
export function ConfirmButton({ label, question, onConfirm, disabled, testid }) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return html`<button class="danger" disabled=${disabled} data-testid=${testid}
      onClick=${() => setAsking(true)}>${label}</button>`;
  }
  return html`<span class="confirm" role="group">
    <span>${question}</span>
    <button class="danger" data-testid=${testid && `${testid}-yes`}
      onClick=${() => { setAsking(false); onConfirm(); }}>Yes, ${label.toLowerCase()}</button>
    <button class="secondary" onClick=${() => setAsking(false)}>Cancel</button>
  </span>`;
}

/** A labelled select of `options` ([value, text] pairs) with an "All" choice of ''. */
export function FilterSelect({ id, label, value, options, onChange }) {
  return html`<span class="filter">
    <label for=${id}>${label}</label>
    <select id=${id} data-testid=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      <option value="">All</option>
      ${options.map(([v, text]) => html`<option value=${v}>${text}</option>`)}
    </select>
  </span>`;
}

/** A button that copies `text` to the clipboard and says whether it did. */
export function CopyButton({ text, testid }) {
  const [said, setSaid] = useState('');
  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied.');
    } catch {
      setSaid('The browser refused the clipboard: select the text and copy it.');
    }
  }
  return html`<button class="secondary" data-testid=${testid} onClick=${copy}>Copy</button>
    ${said && html`<span class="muted" role="status">${said}</span>`}`;
}

/** Seconds as "90 s", "15 min", "2 h", "3 d" (the largest whole unit). */
export function seconds(s) {
  if (s == null) return '—';
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['min', 60]])
    if (s >= size && s % size === 0) return `${s / size} ${unit}`;
  return `${s} s`;
}

// ---- owner pages (Tools, MCP, Runs) ----------------------------------------

/** True when the node has no such route (an older node): the page degrades. */
export function missingRoute(error) {
  return Boolean(error && error.status === 404 && error.detail === 'no such route');
}

/** Calls `load()` now and every `ms` while mounted (see useEvery): { data, error }. */
export function usePoll(load, ms) {
  const [state, setState] = useState({ data: null, error: null });
  useEvery(() => load().then((data) => setState({ data, error: null }), (error) => setState((s) => ({ ...s, error }))), ms);
  return state;
}

/** A policy reason code (actors/tenant/policy.hpp) in words. */
const reasons = {
  explicit_grant: 'allowed: granted to this agent',
  default_grant: 'allowed by default',
  platform_default: 'allowed: a platform default',
  explicit_deny: 'denied for this agent',
  not_granted: 'not granted to this agent',
  server_disabled: 'its server is disabled',
  server_untrusted: 'its server is not trusted',
  server_not_connected: 'its server is not connected (run the connection test)',
  not_allowlisted: 'not among the server’s allowed tools',
  not_discovered: 'the server did not list it at the last test',
  integration_unavailable: 'its integration is not connected',
  prerequisite_denied: 'needs contact search, which is not allowed',
  route_not_selected: 'another implementation serves this action',
  pinned_route_unavailable: 'the pinned implementation is not available, and a pinned route has no substitute',
  text_chat_only: 'only in an owner’s text chat',
  channel_excluded: 'not on this channel',
  caller_limited: 'not for this caller',
  sender_not_admin: 'the sender is not a saved admin',
  not_inherited: 'a child run never inherits it',
  parent_not_granted: 'the parent run does not have it',
  not_in_snapshot: 'not in this run’s tools',
  unknown_tool: 'no such tool',
  foreign_server: 'not one of this account’s servers',
  server_needs_auth: 'its server needs you to sign in again',
  owner_conversation_only: 'only in the owner’s own conversations',
  automatic_selected: 'chosen automatically: the first available implementation',
  pinned_selected: 'pinned by you',
  no_implementation: 'none of your servers implements it',
  no_available_implementation: 'none of its implementations is available',
};
export function reasonText(code) {
  return reasons[code] || (code ? code.replace(/_/g, ' ') : '');
}

/**
 * The grant control of one tool for one agent: allow, deny or the default,
 * saved at once (PUT /v1/agents/{agent}/grants); shows the effective answer.
 * `row`: a grants page row; `onSaved(row)` with the node's answer.
 */
export function GrantControl({ agentId, row, onSaved, label }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  // The choice stays shown while the node saves it.
  const [shown, setShown] = useState(row.decision);
  useEffect(() => setShown(row.decision), [row.decision]);
  async function choose(event) {
    const decision = event.currentTarget.value;
    setShown(decision);
    setBusy(true);
    setError(null);
    try {
      const body = { tool: row.tool, decision };
      if (row.server_id) body.server_id = row.server_id;
      const saved = await api('PUT', `/v1/agents/${encodeURIComponent(agentId)}/grants`, body);
      onSaved({ ...row, ...saved });
    } catch (failure) {
      setShown(row.decision);
      setError(failure);
    }
    setBusy(false);
  }
  return html`<span class="grant">
    <select aria-label=${label || `Grant of ${row.tool}`} value=${shown} disabled=${busy}
      onChange=${choose} data-testid="grant">
      <option value="default">Default</option>
      <option value="allow">Allow</option>
      <option value="deny">Deny</option>
    </select>
    <span class=${row.allowed ? 'ok' : 'muted'} data-testid="effective">
      ${row.allowed ? 'Allowed' : 'Not allowed'}${row.reason ? ` — ${reasonText(row.reason)}` : ''}</span>
    <${ErrorNote} error=${error} />
  </span>`;
}
