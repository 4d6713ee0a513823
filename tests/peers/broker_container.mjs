// A stand-in for a brokered MCP container (the Monzo model), built on the
// official MCP TypeScript SDK: it stores no provider credentials. Each request
// must carry its endpoint bearer; a tool that needs the provider takes the
// request's broker assertion (X-Voxos-Broker-Assertion), exchanges it at the
// node's private broker route for the user's current provider access token,
// and verifies that token against the provider's keys (issuer and audience)
// before using it. Unauthenticated, it answers 401 naming its protected
// resource metadata, whose authorization server is the provider: that is how
// the node's browser sign-in finds where the user signs in.
//
//   node broker_container.mjs --endpoint-bearer SECRET [--issuer URL] [--broker URL] [--port N]
//
// Prints `listening <port>` when ready (127.0.0.1 only). Test-only control:
// POST /control/configure {"issuer"?, "broker"?} (a test learns the node's
// broker port after this container's: each needs the other's URL),
// GET /control/stats ({"exchanges", "exchange_failures", "mcp_401"}),
// POST /control/replay (the next tool call presents the previous call's
// assertion again, which the broker must refuse).
import http from "node:http";
import { AsyncLocalStorage } from "node:async_hooks";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createRemoteJWKSet, jwtVerify } from "jose";

import { flagInteger, flagValue, unknownFlag } from "./flags.mjs";
import { readBody, rpcError, sendJson } from "./http_util.mjs";

const options = { port: 0, endpointBearer: "", issuer: "", broker: "" };
for (let idx = 2; idx < process.argv.length; ++idx) {
  const arg = process.argv[idx];
  const value = () => flagValue("broker_container", arg, process.argv[++idx]);
  if (arg === "--port") options.port = flagInteger("broker_container", arg, process.argv[++idx], 0, 65535);
  else if (arg === "--endpoint-bearer") options.endpointBearer = value();
  else if (arg === "--issuer") options.issuer = value();
  else if (arg === "--broker") options.broker = value();
  else unknownFlag("broker_container", arg);
}
if (!options.endpointBearer) {
  console.error("broker_container: --endpoint-bearer is required");
  process.exit(2);
}

const stats = { exchanges: 0, exchange_failures: 0, mcp_401: 0 };
let replayNext = false;
let lastAssertion = "";
const requestContext = new AsyncLocalStorage(); // the request's broker assertion
let jwks;
let origin = "";
let mcpUrl = "";

/// The provider token for this request's user, through the broker.
async function providerToken() {
  let assertion = requestContext.getStore() ?? "";
  if (replayNext) {
    replayNext = false;
    assertion = lastAssertion;
  }
  lastAssertion = requestContext.getStore() ?? "";
  const answer = await fetch(options.broker, {
    method: "POST",
    headers: { authorization: `Bearer ${assertion}`, "content-type": "application/json" },
    body: JSON.stringify({ server_id: serverIdOf(assertion) }),
  });
  const body = await answer.json();
  if (!answer.ok) {
    ++stats.exchange_failures;
    throw new Error(`broker refused: ${answer.status} ${body.error?.code ?? ""}`);
  }
  ++stats.exchanges;
  jwks ??= createRemoteJWKSet(new URL(`${options.issuer}/jwks`));
  const { payload } = await jwtVerify(body.access_token, jwks, {
    issuer: options.issuer,
    audience: mcpUrl,
  });
  return payload;
}

/// The server id the assertion is bound to (its `srv` claim), read without
/// verifying: the broker verifies it.
function serverIdOf(assertion) {
  try {
    const claims = JSON.parse(Buffer.from(assertion.split(".")[1], "base64url").toString("utf8"));
    return typeof claims.srv === "string" ? claims.srv : "";
  } catch {
    return "";
  }
}

function makeServer() {
  const server = new McpServer({ name: "broker-container", version: "1.0.0" });
  server.registerTool(
    "provider_whoami",
    { description: "Who the provider token the broker gave speaks for.", annotations: { readOnlyHint: true } },
    async () => {
      const claims = await providerToken();
      return {
        content: [{ type: "text", text: JSON.stringify({ sub: claims.sub, aud: claims.aud, scope: claims.scope }) }],
      };
    },
  );
  return server;
}

const protectedResourceMetadata = () => ({
  resource: mcpUrl,
  authorization_servers: [options.issuer],
  scopes_supported: ["mcp:read"],
  bearer_methods_supported: ["header"],
});

const httpServer = http.createServer(async (req, res) => {
  const path = new URL(req.url, origin).pathname;
  try {
    if (path === "/.well-known/oauth-protected-resource/mcp")
      return sendJson(res, 200, protectedResourceMetadata());
    if (path === "/control/stats") return sendJson(res, 200, stats);
    if (path === "/control/configure" && req.method === "POST") {
      const settings = JSON.parse(await readBody(req));
      if (typeof settings.issuer === "string") options.issuer = settings.issuer;
      if (typeof settings.broker === "string") options.broker = settings.broker;
      jwks = undefined;
      return sendJson(res, 200, { issuer: options.issuer, broker: options.broker });
    }
    if (path === "/control/replay" && req.method === "POST") {
      replayNext = true;
      return sendJson(res, 200, { replay_next: true });
    }
    if (path !== "/mcp") return sendJson(res, 404, { error: "not found" });
    if (req.headers.authorization !== `Bearer ${options.endpointBearer}`) {
      ++stats.mcp_401;
      res.setHeader("www-authenticate",
        `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`);
      return sendJson(res, 401, { error: "invalid_token" });
    }
    if (req.method !== "POST") return sendJson(res, 405, rpcError(-32000, "Method not allowed"));
    const body = JSON.parse(await readBody(req));
    // Stateless: a fresh server and transport per request.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = makeServer();
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    const assertion = req.headers["x-voxos-broker-assertion"];
    await requestContext.run(typeof assertion === "string" ? assertion : "", () =>
      transport.handleRequest(req, res, body));
  } catch (error) {
    console.error("broker_container:", error);
    if (!res.headersSent) sendJson(res, 500, rpcError(-32603, "Internal error"));
  }
});

httpServer.listen(options.port, "127.0.0.1", () => {
  const { port } = httpServer.address();
  origin = `http://127.0.0.1:${port}`;
  mcpUrl = `${origin}/mcp`;
  process.stdout.write(`listening ${port}\n`);
});
