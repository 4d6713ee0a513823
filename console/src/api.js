// The console's only way to the node: the documented HTTP API, with the
// token held in session storage and sent as the bearer header (never in a
// URL, never in a cookie a cross-site request could carry).
const tokenKey = 'voxos.token';
const kindKey = 'voxos.kind';

export const session = {
  token: () => sessionStorage.getItem(tokenKey),
  /** 'owner' (a tenant token) or 'operator' (the admin token). */
  kind: () => sessionStorage.getItem(kindKey),
  save(token, kind) {
    sessionStorage.setItem(tokenKey, token);
    sessionStorage.setItem(kindKey, kind);
  },
  clear() {
    sessionStorage.removeItem(tokenKey);
    sessionStorage.removeItem(kindKey);
  },
};

/** An API failure, its message written for the person using the console. */
export class ApiError extends Error {
  constructor(status, code, detail) {
    super(explain(status, code, detail));
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

// The node's own message (it never carries secrets or rejected values) behind
// a sentence saying what it means for the person and what to do next.
function explain(status, code, detail) {
  const said = detail ? ` ${detail.charAt(0).toUpperCase()}${detail.slice(1)}.` : '';
  switch (code) {
    case 'unauthorized':
      return 'Your sign-in is no longer valid (the token expired or was revoked). Sign in again.';
    case 'forbidden':
      return `Not allowed.${said}`;
    case 'not_found':
      return `Not found: it may have been deleted, or it belongs to another account.${said}`;
    case 'conflict':
    case 'sequence_conflict':
      return `That clashes with the current state; reload and try again.${said}`;
    case 'unavailable':
      return `Could not reach it, or it did not answer in time.${said}`;
    case 'rejected':
    case 'server_error':
      return `The MCP server refused the request.${said}`;
    case 'needs_auth':
      return `This server needs you to sign in (open Auth and start sign-in).${said}`;
    case 'too_many_requests':
      return 'Too many requests are in progress for this account; try again in a moment.';
    case 'body_too_large':
      return 'That is too large to send.';
    case 'bad_json':
    case 'unknown_field':
    case 'wrong_type':
    case 'missing_field':
    case 'out_of_range':
      return `Please check what you entered.${said}`;
    default:
      return `The node could not do that (${status >= 500 ? 'a node error' : 'refused'}).${said}`;
  }
}

/**
 * Calls the API: `api('GET', '/v1/servers')`, `api('PUT', path, body)`.
 * Answers the parsed JSON (null for an empty body); throws ApiError.
 */
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${session.token() || ''}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      redirect: 'error',
    });
  } catch {
    throw new ApiError(0, 'network', 'the node did not answer; check that it is running');
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    const error = parsed && parsed.error ? parsed.error : {};
    const failure = new ApiError(response.status, error.code || 'http', error.message || '');
    if (response.status === 401) window.dispatchEvent(new CustomEvent('voxos:signed-out', { detail: failure }));
    throw failure;
  }
  return parsed;
}

/** The raw text of a route (Prometheus /metrics). */
export async function apiText(path) {
  const response = await fetch(path, {
    headers: { Authorization: `Bearer ${session.token() || ''}` },
    credentials: 'omit',
    cache: 'no-store',
  });
  if (!response.ok) throw new ApiError(response.status, 'http', '');
  return response.text();
}

/**
 * Follows a run's activity stream (GET /v1/runs/{run}/events, server-sent
 * events) with the bearer header, which EventSource cannot send: calls
 * onEvent('open', null) once the node accepted the stream, then
 * onEvent(type, data) per event until the stream ends or stop() is called.
 */
export function follow(path, onEvent) {
  const controller = new AbortController();
  (async () => {
    const response = await fetch(path, {
      headers: { Authorization: `Bearer ${session.token() || ''}`, Accept: 'text/event-stream' },
      credentials: 'omit',
      cache: 'no-store',
      signal: controller.signal,
    });
    if (!response.ok || !response.body) {
      onEvent('error', { status: response.status });
      return;
    }
    onEvent('open', null);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let type = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) type = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length === 0) continue;
        let parsed;
        try {
          parsed = JSON.parse(data.join('\n'));
        } catch {
          parsed = data.join('\n');
        }
        onEvent(type, parsed);
      }
    }
    onEvent('closed', null);
  })().catch((error) => {
    if (error.name !== 'AbortError') onEvent('error', { message: String(error) });
  });
  return () => controller.abort();
}
