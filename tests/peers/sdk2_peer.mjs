// An MCP server on the official TypeScript SDK's second generation
// (@modelcontextprotocol/server 2.x, createMcpHandler, served on node:http
// through @modelcontextprotocol/node's toNodeHandler): the peer of the
// 2026-07-28 lane of bench/mcp_client_bench.cpp.
//
//   node sdk2_peer.mjs [--port N] [--json | --sse | --auto] [--legacy-reject]
//
//   --port N         port on 127.0.0.1 (0, the default: the kernel picks one)
//   --json           answer 2026-07-28 requests as application/json (the default)
//   --sse            answer them as text/event-stream
//   --auto           JSON unless a handler sends something before its result
//   --legacy-reject  answer 2025-era requests with UnsupportedProtocolVersion
//                    (by default the SDK serves them statelessly)
//
// Tools: `echo` {text} (returns the text), `sleep` {ms} (waits, or less when
// cancelled), both read-only. A fresh McpServer per request, as the 2.x
// serving entry builds it (the factory).
//
// Once listening it prints exactly one line, "listening <port>", to stdout.
// Routes: /mcp (MCP), anything else 404.

import http from "node:http";

import { flagInteger, unknownFlag } from "./flags.mjs";

import { toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";

function parseOptions(argv) {
  const options = { port: 0, responseMode: "json", legacy: "stateless" };
  for (let idx = 0; idx < argv.length; ++idx) {
    const arg = argv[idx];
    if (arg === "--json") options.responseMode = "json";
    else if (arg === "--sse") options.responseMode = "sse";
    else if (arg === "--auto") options.responseMode = "auto";
    else if (arg === "--legacy-reject") options.legacy = "reject";
    else if (arg === "--port") options.port = flagInteger("sdk2_peer", arg, argv[++idx], 0, 65535);
    else unknownFlag("sdk2_peer", arg);
  }
  return options;
}

const options = parseOptions(process.argv.slice(2));
const readOnly = { readOnlyHint: true };
const text = (value) => ({ content: [{ type: "text", text: value }] });

function pause(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

function factory() {
  const mcp = new McpServer({ name: "voxos-sdk2-peer", version: "1.0.0" });
  mcp.registerTool(
    "echo",
    {
      description: "Returns the given text unchanged.",
      inputSchema: z.object({ text: z.string().describe("text to return") }),
      annotations: readOnly,
    },
    async ({ text: value }) => text(value),
  );
  mcp.registerTool(
    "sleep",
    {
      description: "Waits the given milliseconds, or less if the call is cancelled.",
      inputSchema: z.object({ ms: z.number().int().min(0).max(60000).describe("milliseconds to wait") }),
      annotations: readOnly,
    },
    async ({ ms }, ctx) => {
      const aborted = await pause(ms, ctx?.mcpReq?.signal ?? ctx?.signal);
      return text(aborted ? `cancelled before ${ms} ms` : `slept ${ms} ms`);
    },
  );
  return mcp;
}

const handler = createMcpHandler(factory, {
  responseMode: options.responseMode,
  legacy: options.legacy,
  onerror: (error) => console.error("sdk2_peer:", error.message),
});
const serve = toNodeHandler(handler, { onerror: (error) => console.error("sdk2_peer:", error) });

const server = http.createServer((req, res) => {
  const path = new URL(req.url, "http://127.0.0.1").pathname;
  if (path !== "/mcp") {
    res.writeHead(404, { "content-type": "application/json" });
    res.end('{"error":"not found"}');
    return;
  }
  serve(req, res).catch((error) => {
    console.error("sdk2_peer: request failed:", error);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});

server.listen(options.port, "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
server.on("error", (error) => {
  console.error("sdk2_peer: cannot listen:", error.message);
  process.exit(1);
});
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
