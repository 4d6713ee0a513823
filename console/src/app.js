// The console's shell: sign-in, the navigation, and the page router
// (location.hash, e.g. #/mcp). Pages are modules under pages/, loaded when
// first opened, so the first screen needs only the shell.
import { api, session } from './api.js';
import { ErrorNote, html, render, useEffect, useState } from './lib.js';

/** Owner pages (a tenant token) and operator pages (the admin token). */
const pages = {
  owner: [
    { id: 'tools', title: 'Tools', load: () => import('./pages/tools.js') },
    { id: 'mcp', title: 'MCP', load: () => import('./pages/mcp.js') },
    { id: 'runs', title: 'Runs', load: () => import('./pages/runs.js') },
    { id: 'audit', title: 'Audit', load: () => import('./pages/audit.js') },
    { id: 'knowledge', title: 'Knowledge', load: () => import('./pages/knowledge.js') },
    { id: 'schedules', title: 'Schedules', load: () => import('./pages/schedules.js') },
    { id: 'contacts', title: 'Contacts', load: () => import('./pages/contacts.js') },
  ],
  operator: [
    { id: 'node', title: 'Node', load: () => import('./pages/node.js') },
    { id: 'tenants', title: 'Tenants', load: () => import('./pages/tenants.js') },
  ],
};

function route() {
  const [id, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  return { id, rest };
}

// A tab that signed in before: the page its URL names starts loading now,
// beside the check of its token, rather than after it.
{
  const list = session.token() ? pages[session.kind()] : null;
  if (list) (list.find((p) => p.id === route().id) || list[0]).load().catch(() => {});
}

/** Marks the first screen interactive (the browser test reads the mark). */
function interactive() {
  if (performance.getEntriesByName('voxos:interactive').length === 0) {
    performance.mark('voxos:interactive');
    document.body.dataset.ready = '1';
  }
}

function SignIn({ onSignedIn, reason }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(reason || null);
  const [busy, setBusy] = useState(false);
  useEffect(interactive, []);
  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    // A tenant token answers whoami; the admin token answers the node status.
    session.save(token.trim(), 'owner');
    try {
      const who = await api('GET', '/v1/whoami');
      onSignedIn({ kind: 'owner', name: who.tenant_name, tenant: who.tenant_id });
      return;
    } catch (failure) {
      if (failure.status !== 401 && failure.status !== 403) {
        session.clear();
        setError(failure);
        setBusy(false);
        return;
      }
    }
    session.save(token.trim(), 'operator');
    try {
      const status = await api('GET', '/v1/admin/status');
      onSignedIn({ kind: 'operator', name: `node ${status.node_id}` });
    } catch (failure) {
      session.clear();
      setError(
        failure.status === 401
          ? new Error('That token is not valid here: paste a tenant token (owner) or the admin token (operator).')
          : failure,
      );
      setBusy(false);
    }
  }
  return html`<main class="sign-in">
    <h1>Voxos console</h1>
    <form onSubmit=${submit}>
      <label for="token">Token</label>
      <input id="token" name="token" type="password" autocomplete="off" required
        value=${token} onInput=${(e) => setToken(e.currentTarget.value)} />
      <p class="muted">A tenant token opens the owner's pages; the admin token opens the operator's.
        It is kept for this browser tab only.</p>
      <button type="submit" disabled=${busy || !token.trim()}>Sign in</button>
    </form>
    <${ErrorNote} error=${error} />
  </main>`;
}

function Page({ entry, who, rest }) {
  const [module, setModule] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setModule(null);
    setError(null);
    entry.load().then(setModule, setError);
  }, [entry]);
  if (error) return html`<${ErrorNote} error=${error} />`;
  if (!module) return html`<p class="muted">Loading…</p>`;
  const View = module.default;
  return html`<${View} who=${who} rest=${rest} ready=${interactive} />`;
}

function Shell() {
  const [who, setWho] = useState(null);
  const [reason, setReason] = useState(null);
  // A tab that signed in before shows nothing until its token is checked (not
  // the sign-in form, which would also mark the first screen interactive).
  const [checking, setChecking] = useState(() => Boolean(session.token() && session.kind()));
  const [where, setWhere] = useState(route());
  useEffect(() => {
    const onHash = () => setWhere(route());
    const onSignedOut = (event) => {
      session.clear();
      setWho(null);
      setReason(event.detail);
    };
    addEventListener('hashchange', onHash);
    addEventListener('voxos:signed-out', onSignedOut);
    return () => {
      removeEventListener('hashchange', onHash);
      removeEventListener('voxos:signed-out', onSignedOut);
    };
  }, []);
  // A tab that signed in before keeps its session until the tab closes.
  useEffect(() => {
    const kind = session.kind();
    if (!session.token() || !kind) return;
    const check = kind === 'owner' ? api('GET', '/v1/whoami') : api('GET', '/v1/admin/status');
    check
      .then(
        (answer) =>
          setWho(kind === 'owner'
            ? { kind, name: answer.tenant_name, tenant: answer.tenant_id }
            : { kind, name: `node ${answer.node_id}` }),
        () => session.clear(),
      )
      .finally(() => setChecking(false));
  }, []);
  if (checking) return html`<p class="muted">Signing in…</p>`;
  if (!who) return html`<${SignIn} reason=${reason} onSignedIn=${(w) => { setReason(null); setWho(w); }} />`;
  const list = pages[who.kind];
  const entry = list.find((p) => p.id === where.id) || list[0];
  function signOut() {
    session.clear();
    setWho(null);
  }
  return html`<div class="shell">
    <header>
      <strong>Voxos</strong>
      <nav aria-label="pages">
        ${list.map((p) => html`<a href=${`#/${p.id}`} aria-current=${p === entry ? 'page' : undefined}>${p.title}</a>`)}
      </nav>
      <span class="who" data-testid="who">${who.kind === 'owner' ? who.name : `operator · ${who.name}`}</span>
      <button class="link" onClick=${signOut}>Sign out</button>
    </header>
    <main><${Page} entry=${entry} who=${who} rest=${where.rest} key=${entry.id} /></main>
  </div>`;
}

render(html`<${Shell} />`, document.getElementById('app'));
