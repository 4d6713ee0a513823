// MCP: the account's MCP servers (each a ServerCard, pages/mcp_server.js),
// the preset catalog with its variants, and the custom server form. Routes:
// GET|POST /v1/servers, GET /v1/catalog, GET /v1/agents; the cards use the
// per-server routes.
import { api } from '../api.js';
import { ErrorNote, html, Loading, missingRoute, useEffect, useState } from '../lib.js';
import { ServerCard } from './mcp_server.js';

/** A refusal of POST /v1/servers in words: the URL policy's above all. */
function explainCreateFailure(failure) {
  if (failure.status === 403)
    return new Error(
      `The node’s URL policy refused this address: ${failure.detail || 'not allowed'}. Use a public https URL, ` +
        'or ask the node’s operator to register this exact URL for MCP (registered_urls in its configuration).',
    );
  return new Error(`The server was not added. ${failure.message}`);
}

function CustomServerForm({ onCreated }) {
  const [url, setUrl] = useState('');
  const [transport, setTransport] = useState('streamable_http');
  const [label, setLabel] = useState('');
  const [auth, setAuth] = useState('none');
  const [headerName, setHeaderName] = useState('');
  const [headerValue, setHeaderValue] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = { url: url.trim(), transport };
      if (label.trim()) body.label = label.trim();
      if (auth !== 'none') body.auth = auth;
      if (headerName.trim()) body.headers = { [headerName.trim()]: headerValue };
      await api('POST', '/v1/servers', body);
      setUrl('');
      setLabel('');
      setHeaderName('');
      setHeaderValue('');
      await onCreated();
    } catch (failure) {
      setError(explainCreateFailure(failure));
    }
    setBusy(false);
  }
  return html`<form class="card form-grid" onSubmit=${submit} data-testid="custom-form">
    <h3>Custom server</h3>
    <label for="custom-url">URL</label>
    <input id="custom-url" type="url" required placeholder="https://example.com/mcp" value=${url}
      onInput=${(e) => setUrl(e.currentTarget.value)} />
    <label for="custom-transport">Transport</label>
    <select id="custom-transport" value=${transport} onChange=${(e) => setTransport(e.currentTarget.value)}>
      <option value="streamable_http">Streamable HTTP</option>
      <option value="sse">HTTP + SSE (legacy)</option>
    </select>
    <label for="custom-label">Label</label>
    <input id="custom-label" placeholder="How you will recognise it" value=${label}
      onInput=${(e) => setLabel(e.currentTarget.value)} />
    <label for="custom-auth">Sign-in</label>
    <select id="custom-auth" value=${auth} onChange=${(e) => setAuth(e.currentTarget.value)}>
      <option value="none">None</option>
      <option value="oauth_authorization_code">OAuth sign-in (authorization code)</option>
    </select>
    <label for="custom-header">Header (optional)</label>
    <div class="row">
      <input id="custom-header" placeholder="Name, e.g. X-Api-Key" value=${headerName}
        onInput=${(e) => setHeaderName(e.currentTarget.value)} />
      <input type="password" autocomplete="off" aria-label="Header value" placeholder="Value (sealed on the node)"
        value=${headerValue} onInput=${(e) => setHeaderValue(e.currentTarget.value)} />
    </div>
    <div><button type="submit" disabled=${busy || !url.trim()}>Add server</button></div>
    <${ErrorNote} error=${error} />
  </form>`;
}

function PresetCard({ preset, onCreated }) {
  const [variant, setVariant] = useState(preset.variants.length ? preset.variants[0].id : '');
  const [url, setUrl] = useState('');
  const [key, setKey] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  // A preset that sends a key takes it as its one header (sealed on the node).
  const keyHeader = preset.auth === 'api_key_header' ? preset.api_key_header
    : preset.auth === 'static_bearer' || preset.auth === 'brokered_oauth' ? 'Authorization' : null;
  async function add() {
    setBusy(true);
    setError(null);
    try {
      const body = { preset_id: preset.id };
      if (variant) body.variant = variant;
      if (preset.url_required) body.url = url.trim();
      if (keyHeader) body.headers = { [keyHeader]: keyHeader === 'Authorization' ? `Bearer ${key.trim()}` : key.trim() };
      await api('POST', '/v1/servers', body);
      setKey('');
      await onCreated();
    } catch (failure) {
      setError(explainCreateFailure(failure));
    }
    setBusy(false);
  }
  return html`<div class="card" data-testid="preset" data-preset=${preset.id}>
    <h4>${preset.label}</h4>
    <p class="muted">${preset.tools.length} curated tools · auth ${preset.auth}${preset.url ? ` · ${preset.url}` : ''}</p>
    ${preset.variants.length > 0 && html`<select aria-label=${`${preset.label} variant`} value=${variant}
      onChange=${(e) => setVariant(e.currentTarget.value)}>
      ${preset.variants.map((v) => html`<option key=${v.id} value=${v.id}>${v.label}</option>`)}
    </select>`}
    ${preset.url_required && html`<input type="url" aria-label=${`${preset.label} URL`} placeholder="https://…"
      value=${url} onInput=${(e) => setUrl(e.currentTarget.value)} />`}
    ${keyHeader && html`<input type="password" autocomplete="off" aria-label=${`${preset.label} API key`}
      placeholder=${keyHeader === 'Authorization' ? 'API key or token' : `API key (${keyHeader})`}
      value=${key} onInput=${(e) => setKey(e.currentTarget.value)} />`}
    <button class="secondary" disabled=${busy || (preset.url_required && !url.trim()) || (keyHeader && !key.trim())}
      onClick=${add}>Add</button>
    <${ErrorNote} error=${error} />
  </div>`;
}

function Catalog({ onCreated }) {
  const [state, setState] = useState({ presets: null, error: null, missing: false });
  useEffect(() => {
    api('GET', '/v1/catalog').then(
      (answer) => setState({ presets: answer.presets, error: null, missing: false }),
      (error) => setState({ presets: null, error: missingRoute(error) ? null : error, missing: missingRoute(error) }),
    );
  }, []);
  if (state.missing)
    return html`<p class="muted" data-testid="catalog-missing">This node does not offer its preset catalog yet
      (GET /v1/catalog); add a custom server below.</p>`;
  if (state.error) return html`<${ErrorNote} error=${state.error} />`;
  if (!state.presets) return html`<${Loading} what="the catalog" />`;
  return html`<div class="grid" data-testid="catalog">
    ${state.presets.map((p) => html`<${PresetCard} key=${p.id} preset=${p} onCreated=${onCreated} />`)}
  </div>`;
}

export default function McpPage({ ready }) {
  const [servers, setServers] = useState(null);
  const [agents, setAgents] = useState([]);
  const [error, setError] = useState(null);
  const load = () =>
    Promise.all([api('GET', '/v1/servers'), api('GET', '/v1/agents')]).then(([list, agentList]) => {
      setServers(list);
      setAgents(agentList);
      setError(null);
    }, setError);
  useEffect(() => {
    load().finally(ready);
  }, []);
  return html`<div data-testid="mcp-page">
    <h1>MCP servers</h1>
    <${ErrorNote} error=${error} />
    ${!servers ? (!error && html`<${Loading} what="servers" />`)
      : servers.length === 0 ? html`<p class="muted">No servers yet: add one from the catalog or by URL below.</p>`
      : servers.map((s) => html`<${ServerCard} key=${s.server_id} server=${s} agents=${agents} onChanged=${load} />`)}
    <h2>Add a server</h2>
    <h3>From the catalog</h3>
    <${Catalog} onCreated=${load} />
    <${CustomServerForm} onCreated=${load} />
  </div>`;
}
