// Tools: for one agent, every tool it could be granted (internal tools, phone
// integrations, each MCP server's tools) with its kind and risk, a control
// that sets the grant, and the reason behind the effective answer; then the
// action routes: automatic or pinned, which implementation the current
// policy resolves and why, and controls to pin a candidate or go back to
// automatic. Routes: GET /v1/agents, GET /v1/servers,
// GET|PUT /v1/agents/{agent}/grants, GET /v1/agents/{agent}/routes,
// PUT /v1/agents/{agent}/routes/{action}.
import { api } from '../api.js';
import { ErrorNote, GrantControl, html, Loading, missingRoute, reasonText, useEffect, useState } from '../lib.js';

const agentPath = (agentId) => `/v1/agents/${encodeURIComponent(agentId)}`;

/** The server's label as the owner named it, else its URL, else its id. */
export function serverName(servers, serverId) {
  const server = (servers || []).find((s) => s.server_id === serverId);
  if (!server) return serverId;
  return server.label || server.url || serverId;
}

function kindOf(row) {
  if (row.kind) return row.kind;
  if (row.origin === 'integration') return 'Phone call';
  if (row.read_only === true) return 'Read-only';
  if (row.read_only === false) return 'Action';
  return '—';
}

function GrantTable({ title, rows, agentId, onSaved, testid }) {
  if (rows.length === 0) return null;
  return html`<section class="card" data-testid=${testid}>
    <h3>${title}</h3>
    <table>
      <thead><tr><th>Tool</th><th>Kind</th><th>Risk</th><th>Grant and effect</th></tr></thead>
      <tbody>
        ${rows.map((row) => html`<tr key=${`${row.server_id}/${row.tool}`} data-tool=${row.tool}>
          <td class="mono">${row.tool}</td>
          <td>${kindOf(row)}</td>
          <td>${row.risk ? html`<span class=${`tag risk-${row.risk}`}>${row.risk}</span>` : '—'}</td>
          <td><${GrantControl} agentId=${agentId} row=${row} onSaved=${onSaved} /></td>
        </tr>`)}
      </tbody>
    </table>
  </section>`;
}

function Grants({ agentId, servers, onChanged }) {
  const [rows, setRows] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setRows(null);
    api('GET', `${agentPath(agentId)}/grants`).then(setRows, setError);
  }, [agentId]);
  if (error) return html`<${ErrorNote} error=${error} />`;
  if (!rows) return html`<${Loading} what="tools" />`;
  function saved(next) {
    setRows((all) => all.map((r) => (r.server_id === next.server_id && r.tool === next.tool ? next : r)));
    onChanged();
  }
  const internal = rows.filter((r) => !r.server_id);
  const phones = rows.filter((r) => r.server_id && r.origin === 'integration');
  const byServer = new Map();
  for (const row of rows)
    if (row.server_id && row.origin !== 'integration') {
      if (!byServer.has(row.server_id)) byServer.set(row.server_id, []);
      byServer.get(row.server_id).push(row);
    }
  return html`
    <${GrantTable} title="Internal tools" rows=${internal} agentId=${agentId} onSaved=${saved} testid="internal-tools" />
    <${GrantTable} title="Phone integrations" rows=${phones} agentId=${agentId} onSaved=${saved} testid="phone-tools" />
    ${[...byServer].map(([serverId, list]) => html`<${GrantTable} key=${serverId}
      title=${`MCP server: ${serverName(servers, serverId)}`} rows=${list} agentId=${agentId}
      onSaved=${saved} testid="server-tools" />`)}`;
}

function implementation(servers, target) {
  if (!target || !target.server_id) return 'none';
  return `${target.tool} on ${serverName(servers, target.server_id)}`;
}

function Route({ route, agentId, servers, onChanged }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function put(body) {
    setBusy(true);
    setError(null);
    try {
      await api('PUT', `${agentPath(agentId)}/routes/${encodeURIComponent(route.action)}`, body);
      await onChanged();
    } catch (failure) {
      setError(failure);
    }
    setBusy(false);
  }
  const pinned = route.mode === 'pinned';
  const isPinned = (c) => pinned && route.pinned && route.pinned.server_id === c.server_id && route.pinned.tool === c.tool;
  return html`<section class="card" data-testid="route" data-action=${route.action}>
    <div class="row">
      <h3 class="mono">${route.action}</h3>
      <span class="tag" data-testid="route-mode">${pinned ? 'Pinned' : 'Automatic'}</span>
      ${pinned && html`<button class="secondary" disabled=${busy} onClick=${() => put({ mode: 'automatic' })}>
        Back to automatic</button>`}
    </div>
    <p data-testid="route-resolved">
      Resolves to <strong>${implementation(servers, route.resolved)}</strong> — ${reasonText(route.reason)}.</p>
    ${route.candidates.length === 0
      ? html`<p class="muted">Add one of the servers that implement this action (see MCP) to choose here.</p>`
      : html`<table>
        <thead><tr><th>Implementation</th><th>Server</th><th>Available</th><th></th></tr></thead>
        <tbody>${route.candidates.map((c) => html`<tr key=${`${c.server_id}/${c.tool}`} data-testid="candidate">
          <td class="mono">${c.tool}</td>
          <td>${serverName(servers, c.server_id)}</td>
          <td class=${c.available ? 'ok' : 'muted'}>${c.available ? 'Yes' : 'No'} — ${reasonText(c.reason)}</td>
          <td>${isPinned(c)
            ? html`<span class="tag">Pinned</span>`
            : html`<button class="secondary" disabled=${busy}
                onClick=${() => put({ mode: 'pinned', server_id: c.server_id, tool: c.tool })}>Pin this</button>`}</td>
        </tr>`)}</tbody>
      </table>`}
    <${ErrorNote} error=${error} />
  </section>`;
}

function Routes({ agentId, servers, version }) {
  const [state, setState] = useState({ routes: null, error: null, missing: false });
  const load = () =>
    api('GET', `${agentPath(agentId)}/routes`).then(
      (answer) => setState({ routes: answer.routes, error: null, missing: false }),
      (error) => setState({ routes: null, error: missingRoute(error) ? null : error, missing: missingRoute(error) }),
    );
  useEffect(() => {
    load();
  }, [agentId, version]);
  if (state.missing)
    return html`<p class="muted" data-testid="routes-missing">This node does not list action routes yet
      (it needs GET /v1/agents/{agent}/routes); routes can still be set through the HTTP API.</p>`;
  if (state.error) return html`<${ErrorNote} error=${state.error} />`;
  if (!state.routes) return html`<${Loading} what="routes" />`;
  return state.routes.map((route) => html`<${Route} key=${route.action} route=${route}
    agentId=${agentId} servers=${servers} onChanged=${load} />`);
}

export default function ToolsPage({ ready }) {
  const [agents, setAgents] = useState(null);
  const [servers, setServers] = useState([]);
  const [agentId, setAgentId] = useState(null);
  const [error, setError] = useState(null);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    Promise.all([api('GET', '/v1/agents'), api('GET', '/v1/servers')]).then(([list, serverList]) => {
      setAgents(list);
      setServers(serverList);
      const chosen = list.find((a) => a.is_default) || list[0];
      setAgentId(chosen ? chosen.agent_id : null);
      ready();
    }, (failure) => {
      setError(failure);
      ready();
    });
  }, []);
  if (error) return html`<${ErrorNote} error=${error} />`;
  if (!agents) return html`<${Loading} what="agents" />`;
  return html`<div data-testid="tools-page">
    <h1>Tools</h1>
    <div class="row">
      <label for="agent">Agent</label>
      <select id="agent" value=${agentId} onChange=${(e) => setAgentId(e.currentTarget.value)}>
        ${agents.map((a) => html`<option key=${a.agent_id} value=${a.agent_id}>${a.name}${a.is_default ? ' (default)' : ''}</option>`)}
      </select>
    </div>
    ${agentId && html`
      <h2>Grants</h2>
      <p class="muted">Default follows the platform’s rule for the tool; Allow and Deny are yours.
        A change reaches new runs, never a running one.</p>
      <${Grants} key=${agentId} agentId=${agentId} servers=${servers} onChanged=${() => setVersion((v) => v + 1)} />
      <h2>Action routes</h2>
      <p class="muted">An action such as web search can be served by several servers. Automatic takes the
        first available one; a pinned route uses exactly the one you chose, or none.</p>
      <${Routes} agentId=${agentId} servers=${servers} version=${version} />`}
  </div>`;
}
