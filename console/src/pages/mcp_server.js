// One MCP server on the MCP page (pages/mcp.js): its state, the connection
// test, discovered tools with read-only marks and allowed-tool checkboxes,
// per-agent grants of its allowed tools, the Auth panel of a server that
// signs in with OAuth, and Advanced with Delete server. Everything from the
// server (label, tool names, titles, descriptions) is shown as text.
import { api } from '../api.js';
import {
  ConfirmButton, CopyButton, ErrorNote, GrantControl, html, missingRoute, useAction, useEffect, useState, when,
} from '../lib.js';

const serverPath = (id) => `/v1/servers/${encodeURIComponent(id)}`;

/** Auth modes whose owner signs in through the provider (the Auth panel). */
const signInModes = new Set(['oauth_authorization_code', 'brokered_oauth']);

/** An http(s) URL as it is, else null: a provider's URL becomes a link only then. */
function webUrl(text) {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

function explainTestFailure(failure) {
  return new Error(`The connection test failed. ${failure.message}`);
}

function LastTest({ server, result }) {
  const test = server.last_test;
  if (result) return html`<span class="ok" data-testid="test-result">${result}</span>`;
  if (!test) return html`<span class="muted" data-testid="last-test">${server.discovered_us
    ? `Last discovery ${when(server.discovered_us)}` : 'Not tested yet'}</span>`;
  if (test.ok) return html`<span class="ok" data-testid="last-test">Last test passed ${when(test.at_us)}</span>`;
  return html`<span class="bad" data-testid="last-test">Last test failed ${when(test.at_us)}: ${
    (test.error && test.error.message) || 'no detail'}</span>`;
}

/** The server's tools: from GET /v1/servers/{id}, else from a grants page. */
function useTools(server, version) {
  const [state, setState] = useState({ tools: null, fromGrants: false, error: null });
  useEffect(() => {
    api('GET', serverPath(server.server_id)).then(
      (detail) => setState({ tools: detail.tools, last_test: detail.last_test, fromGrants: false, error: null }),
      async (error) => {
        if (!missingRoute(error)) return setState({ tools: null, error });
        // An older node: the default agent's grants page names the server's tools.
        try {
          const agents = await api('GET', '/v1/agents');
          const agent = agents.find((a) => a.is_default) || agents[0];
          const rows = await api('GET', `/v1/agents/${encodeURIComponent(agent.agent_id)}/grants`);
          const tools = rows.filter((r) => r.server_id === server.server_id).map((r) => ({
            name: r.tool, read_only: r.read_only, allowed: server.allowed_tools.includes(r.tool),
          }));
          setState({ tools, fromGrants: true, error: null });
        } catch (failure) {
          setState({ tools: null, error: failure });
        }
      },
    );
  }, [server.server_id, version]);
  return state;
}

/**
 * A value the page shows at once when the owner changes it, before the node
 * answers (a checkbox keeps the state it was clicked to); it follows `value`
 * whenever the node's record changes.
 */
function useShown(value) {
  const [shown, setShown] = useState(value);
  useEffect(() => setShown(value), [JSON.stringify(value)]);
  return [shown, setShown];
}

function ToolList({ server, tools, onChanged }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [allowed, setAllowed] = useShown(server.allowed_tools);
  async function toggle(name, on) {
    const next = on ? [...new Set([...allowed, name])] : allowed.filter((t) => t !== name);
    setAllowed(next);
    setBusy(true);
    setError(null);
    try {
      await api('PATCH', serverPath(server.server_id), { allowed_tools: next });
      await onChanged();
    } catch (failure) {
      setAllowed(server.allowed_tools);
      setError(failure);
    }
    setBusy(false);
  }
  if (tools.length === 0) return html`<p class="muted">No tools discovered yet: run the connection test.</p>`;
  return html`<table data-testid="discovered-tools">
    <thead><tr><th>Allowed</th><th>Tool</th><th>Marks</th><th>Description</th></tr></thead>
    <tbody>${tools.map((tool) => html`<tr key=${tool.name} data-tool=${tool.name}>
      <td><input type="checkbox" aria-label=${`Allow ${tool.name}`} checked=${allowed.includes(tool.name)}
        disabled=${busy} onChange=${(e) => toggle(tool.name, e.currentTarget.checked)} /></td>
      <td><span class="mono" data-testid="tool-name">${tool.name}</span>
        ${tool.title ? html`<div class="muted" data-testid="tool-title">${tool.title}</div>` : null}</td>
      <td>${tool.read_only === undefined ? null : tool.read_only
        ? html`<span class="tag" data-testid="read-only">read-only</span>` : html`<span class="tag">changes things</span>`}
        ${tool.destructive ? html` <span class="tag bad">destructive</span>` : null}
        ${!tool.read_only && tool.idempotent ? html` <span class="tag">idempotent</span>` : null}</td>
      <td class="description" data-testid="tool-description">${tool.description || ''}</td>
    </tr>`)}</tbody>
  </table>
  <${ErrorNote} error=${error} />`;
}

/** Each agent's grants of this server's allowed tools. */
function ServerGrants({ server, agents, version }) {
  const [pages, setPages] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    Promise.all(agents.map((a) => api('GET', `/v1/agents/${encodeURIComponent(a.agent_id)}/grants`))).then(
      (all) => setPages(all.map((rows) => rows.filter((r) => r.server_id === server.server_id
        && server.allowed_tools.includes(r.tool)))),
      setError,
    );
  }, [server.server_id, server.allowed_tools.join('\n'), agents.length, version]);
  if (error) return html`<${ErrorNote} error=${error} />`;
  if (!pages) return null;
  if (server.allowed_tools.length === 0) return html`<p class="muted">Allow tools above to grant them to agents.</p>`;
  function saved(agentIdx, next) {
    setPages((all) => all.map((rows, idx) => (idx !== agentIdx ? rows
      : rows.map((r) => (r.tool === next.tool ? next : r)))));
  }
  return html`<table data-testid="server-grants">
    <thead><tr><th>Agent</th><th>Tool</th><th>Grant and effect</th></tr></thead>
    <tbody>${agents.flatMap((agent, agentIdx) => pages[agentIdx].map((row) => html`<tr key=${`${agent.agent_id}/${row.tool}`}
      data-agent=${agent.name} data-tool=${row.tool}>
      <td>${agent.name}</td><td class="mono">${row.tool}</td>
      <td><${GrantControl} agentId=${agent.agent_id} row=${row} label=${`Grant of ${row.tool} to ${agent.name}`}
        onSaved=${(next) => saved(agentIdx, next)} /></td>
    </tr>`))}</tbody>
  </table>`;
}

function AuthPanel({ server, onChanged, onDelete }) {
  const [answer, setAnswer] = useState(null);
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const [busy, setBusy] = useState(false);
  // Open at first when a sign-in is needed; then the owner opens and closes it.
  const [openAtFirst] = useState(Boolean(server.needs_auth));
  async function act(what, run) {
    setBusy(true);
    setError(null);
    setNote(null);
    try {
      await run();
    } catch (failure) {
      setError(new Error(`${what} did not work. ${failure.message}`));
    }
    setBusy(false);
  }
  const startSignIn = (body) => act('Sign-in', async () => {
    setAnswer(await api('POST', `${serverPath(server.server_id)}/sign-in`, body));
    // Sealed on the node now: the page keeps no copy.
    if (body.client_secret) setClientSecret('');
  });
  const finalize = () => act('Finalizing the connection', async () => {
    const done = await api('POST', `${serverPath(server.server_id)}/finalize`);
    setNote(`Connected: ${done.discovered ?? 0} tools discovered.`);
    await onChanged();
  });
  return html`<details class="panel" data-testid="auth-panel" open=${openAtFirst}>
    <summary>Auth ${server.needs_auth ? '— sign-in needed' : server.signed_in ? '— signed in' : ''}</summary>
    <p class="muted">Signing in opens the provider’s page in a new tab; once you approve, the node
      finishes the connection by itself. Use Finalize connection if it did not.</p>
    <div class="row">
      <button disabled=${busy} onClick=${() => startSignIn({})}>Start sign-in</button>
      <button class="secondary" disabled=${busy} onClick=${finalize}>Finalize connection</button>
    </div>
    ${answer && html`<div class="card" data-testid="sign-in-answer">
      <p>${webUrl(answer.authorization_url)
        ? html`<a href=${webUrl(answer.authorization_url)} target="_blank" rel="noopener noreferrer">Open the provider’s sign-in page</a>`
        : html`<span class="bad">The provider’s sign-in address is not a web address; it is not opened.</span>`}</p>
      <label for=${`redirect-${server.server_id}`}>Redirect URI to register with the provider</label>
      <div class="row">
        <input id=${`redirect-${server.server_id}`} class="mono wide" readonly value=${answer.redirect_uri}
          data-testid="redirect-uri" onFocus=${(e) => e.currentTarget.select()} />
        <${CopyButton} text=${answer.redirect_uri} />
      </div>
    </div>`}
    <h4>Your own OAuth client</h4>
    <p class="muted">If the provider does not register clients itself, create one there with the redirect
      URI above, then paste its ID and secret. The secret is sealed on the node and never shown again.</p>
    <div class="row">
      <input aria-label="Client ID" placeholder="Client ID" value=${clientId} onInput=${(e) => setClientId(e.currentTarget.value)} />
      <input aria-label="Client secret" placeholder="Client secret" type="password" autocomplete="off"
        value=${clientSecret} onInput=${(e) => setClientSecret(e.currentTarget.value)} />
      <button disabled=${busy || !clientId.trim()} onClick=${() => startSignIn({
        client_id: clientId.trim(), ...(clientSecret ? { client_secret: clientSecret } : {}) })}>
        Save client & start sign-in</button>
    </div>
    ${note && html`<p class="ok">${note}</p>`}
    <${ErrorNote} error=${error} />
    <${DeleteServer} server=${server} onDelete=${onDelete} />
  </details>`;
}

function DeleteServer({ server, onDelete }) {
  const { run, error } = useAction();
  const remove = () => run(async () => {
    await api('DELETE', serverPath(server.server_id));
    await onDelete();
  });
  return html`<div class="row">
    <${ConfirmButton} label="Delete server" onConfirm=${remove}
      question="Delete this server, its allowed tools and its credentials? This cannot be undone." />
    <${ErrorNote} error=${error} />
  </div>`;
}

export function ServerCard({ server, agents, onChanged }) {
  const [version, setVersion] = useState(0);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [result, setResult] = useState(null);
  const tools = useTools(server, version);
  const [flags, setFlags] = useShown({ enabled: server.enabled, trusted: server.trusted });
  const refresh = async () => {
    await onChanged();
    setVersion((v) => v + 1);
  };
  async function patch(body) {
    setFlags({ ...flags, ...body });
    setBusy(true);
    setError(null);
    try {
      await api('PATCH', serverPath(server.server_id), body);
      await refresh();
    } catch (failure) {
      setFlags({ enabled: server.enabled, trusted: server.trusted });
      setError(failure);
    }
    setBusy(false);
  }
  async function test() {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const answer = await api('POST', `${serverPath(server.server_id)}/test`);
      setResult(`Connected: ${answer.discovered} tools discovered${answer.skipped ? `, ${answer.skipped} skipped` : ''}.`);
    } catch (failure) {
      setError(explainTestFailure(failure));
    }
    await refresh();
    setBusy(false);
  }
  const shown = { ...server, last_test: server.last_test || tools.last_test };
  return html`<section class="card" data-testid="server" data-server=${server.server_id}>
    <div class="row">
      <h3 data-testid="server-label">${server.label || server.url || server.server_id}</h3>
      ${server.preset_id && html`<span class="tag">${server.preset_id}${server.variant ? ` · ${server.variant}` : ''}</span>`}
      <span class=${`tag ${server.connected ? 'ok' : 'bad'}`} data-testid="connected">${server.connected ? 'Connected' : 'Not connected'}</span>
      ${server.needs_auth && html`<span class="tag bad">Sign-in needed</span>`}
    </div>
    <p class="muted mono">${server.url} · ${server.transport} · auth ${server.auth}</p>
    <div class="row">
      <label><input type="checkbox" checked=${flags.enabled} disabled=${busy}
        onChange=${(e) => patch({ enabled: e.currentTarget.checked })} /> Enabled</label>
      <label><input type="checkbox" checked=${flags.trusted} disabled=${busy}
        onChange=${(e) => patch({ trusted: e.currentTarget.checked })} /> Trusted</label>
      <button class="secondary" disabled=${busy} onClick=${test}>Test connection</button>
      <${LastTest} server=${shown} result=${result} />
    </div>
    ${server.enabled && !server.connected
      && html`<p class="muted">Enabled servers need a passing connection test before their tools are used.</p>`}
    <${ErrorNote} error=${error} />
    <h4>Discovered tools</h4>
    ${tools.error ? html`<${ErrorNote} error=${tools.error} />`
      : tools.tools ? html`<${ToolList} server=${server} tools=${tools.tools} onChanged=${refresh} />` : null}
    <h4>Grants</h4>
    <${ServerGrants} server=${server} agents=${agents} version=${version} />
    ${(signInModes.has(server.auth) || server.needs_auth)
      && html`<${AuthPanel} server=${server} onChanged=${refresh} onDelete=${onChanged} />`}
    <details class="panel">
      <summary>Advanced</summary>
      <p class="muted">Server id <span class="mono">${server.server_id}</span>${server.has_headers ? ' · sends sealed headers' : ''}.</p>
      <${DeleteServer} server=${server} onDelete=${onChanged} />
    </details>
  </section>`;
}
