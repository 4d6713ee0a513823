// What every page shares: `html` (htm bound to preact), the hooks, and small
// components for loading, errors and tables. Everything a page shows from the
// API goes through preact's text nodes and attributes, never innerHTML, so
// a server label or tool description holding markup is shown as text.
import { h, render } from './vendor/preact.js';
import { useCallback, useEffect, useRef, useState } from './vendor/hooks.js';
import htm from './vendor/htm.js';

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
