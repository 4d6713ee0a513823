// The official TypeScript SDK as an MCP client of one server, for tests of
// the node's own MCP servers: connects (Streamable HTTP, the initialize
// handshake of the 2025-11-25 revision) with a bearer token, lists the tools,
// makes the calls asked for, and prints one JSON line:
//   {"server": serverInfo, "tools": [names], "calls": [{"name", "result"|"error"}]}
//
//   node sdk_mcp_client.mjs URL TOKEN [CALLS_JSON]
//
// CALLS_JSON: [{"name": ..., "arguments": {...}}, ...]. A connection that
// fails prints {"connect_error": message} and exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, callsText] = process.argv.slice(2);
if (!url || token === undefined) {
  console.error("usage: node sdk_mcp_client.mjs URL TOKEN [CALLS_JSON]");
  process.exit(2);
}
const calls = callsText ? JSON.parse(callsText) : [];
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "voxos-test-client", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (err) {
  console.log(JSON.stringify({ connect_error: String(err?.message ?? err) }));
  process.exit(1);
}
const out = { server: client.getServerVersion(), tools: [], calls: [] };
const listed = await client.listTools();
out.tools = listed.tools.map((tool) => tool.name);
for (const call of calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
    out.calls.push({ name: call.name, result });
  } catch (err) {
    out.calls.push({ name: call.name, error: { code: err?.code, message: String(err?.message) } });
  }
}
await client.close();
console.log(JSON.stringify(out));
