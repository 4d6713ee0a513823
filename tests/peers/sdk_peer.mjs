// An MCP server on the official TypeScript SDK (McpServer +
// StreamableHTTPServerTransport), the reference peer for Voxos's MCP client.
//
//   node sdk_peer.mjs [--port N] [--json | --sse] [--stateless] [--tools N] [--page-size N]
//                     [--changing-tools] [--maps] [--unknown-session-400] [--hostile]
//
//   --port N        port on 127.0.0.1 (0, the default: the kernel picks one)
//   --json          answer POSTs as application/json (enableJsonResponse)
//   --sse           answer POSTs as text/event-stream (the default)
//   --stateless     no Mcp-Session-Id: a fresh server and transport per POST;
//                   GET and DELETE answer 405. A notifications/cancelled lands on
//                   a fresh server and cannot reach its call; a call is aborted
//                   (and counted cancelled) when the client closes its POST.
//   --tools N       N extra tools gen_0 .. gen_{N-1}, small distinct schemas
//   --page-size N   tools/list in pages of N with nextCursor (McpServer itself
//                   always answers with one page)
//   --changing-tools  a tool `reveal_tool` that makes the hidden tool
//                   `late_tool` appear in tools/list and announces it with one
//                   notifications/tools/list_changed on the call's own stream
//                   (before its answer, so only with --sse does it arrive)
//   --maps          a tool `search_places` answering like Google Maps Grounding
//                   Lite (structuredContent {summary, places: [PlaceView]}) with
//                   two fixed places, for tests that register this peer under
//                   the Grounding Lite preset's identity
//   --unknown-session-400  a request naming a session this server does not know
//                   is answered HTTP 400 with JSON-RPC error -32000 "Bad Request:
//                   No valid session ID provided", as server-everything and the
//                   SDK's jsonResponseStreamableHttp example answer it (by
//                   default: 404 -32001 "Session not found", as the
//                   specification asks)
//   --hostile       two tools whose name, title and description hold markup
//                   and script (HOSTILE_TEXTS below), for the console's
//                   injection test: what a hostile server could send, to be
//                   shown as text and never run
//
// Once listening it prints exactly one line, "listening <port>", to stdout,
// and nothing else there (diagnostics go to stderr).
//
// A tools/call whose arguments hold "reject": "422" ("400") is answered HTTP 422 (400)
// before the SDK sees it (see handleMcp).
//
// Routes: POST/GET/DELETE /mcp (MCP), GET /stats (counters as JSON),
// POST /stats/reset, POST /sessions/forget (closes every session and forgets
// it, as a restart of the server would: requests naming one are then
// answered as an unknown session). The stats routes are plain HTTP, so reading them changes
// nothing. Counters: tools/call received (before validation), each JSON-RPC
// method and notification received, tool handlers in flight and their peak
// (total and per tool), calls whose abort signal fired while in flight
// (a notifications/cancelled for them), POST streams the client dropped
// before the answer was complete.

import { randomUUID } from "node:crypto";
import http from "node:http";

import { flagInteger, unknownFlag } from "./flags.mjs";
import { readBody, rpcError, sendJson } from "./http_util.mjs";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

// ---- options ---------------------------------------------------------------

function parseOptions(argv) {
  const options = {
    port: 0, json: false, stateless: false, tools: 0, pageSize: 0, changingTools: false, maps: false,
    unknownSession400: false, hostile: false,
  };
  const integer = (flag, text) => flagInteger("sdk_peer", flag, text);
  for (let idx = 0; idx < argv.length; ++idx) {
    const arg = argv[idx];
    if (arg === "--json") options.json = true;
    else if (arg === "--sse") options.json = false;
    else if (arg === "--stateless") options.stateless = true;
    else if (arg === "--changing-tools") options.changingTools = true;
    else if (arg === "--maps") options.maps = true;
    else if (arg === "--unknown-session-400") options.unknownSession400 = true;
    else if (arg === "--hostile") options.hostile = true;
    else if (arg === "--port") options.port = integer(arg, argv[++idx]);
    else if (arg === "--tools") options.tools = integer(arg, argv[++idx]);
    else if (arg === "--page-size") options.pageSize = integer(arg, argv[++idx]);
    else unknownFlag("sdk_peer", arg);
  }
  return options;
}

const options = parseOptions(process.argv.slice(2));

// ---- counters --------------------------------------------------------------

function freshStats() {
  return {
    tools_call_received: 0,
    methods: {},
    in_flight: 0,
    peak_in_flight: 0,
    cancelled: 0,
    tools: {},
    http: { requests: 0, dropped_posts: 0, rejected_422: 0, rejected_400: 0 },
    sessions: { open: 0, opened: 0, forgotten: 0, unknown: 0 },
  };
}

let stats = freshStats();

function toolStats(name) {
  stats.tools[name] ??= { calls: 0, in_flight: 0, peak_in_flight: 0, cancelled: 0 };
  return stats.tools[name];
}

// Zeroes the counters; what is in flight now stays in flight (and is the new peak).
function resetStats() {
  const previous = stats;
  stats = freshStats();
  stats.in_flight = stats.peak_in_flight = previous.in_flight;
  stats.sessions.open = previous.sessions.open;
  for (const [name, tool] of Object.entries(previous.tools)) {
    if (tool.in_flight > 0) {
      const fresh = toolStats(name);
      fresh.in_flight = fresh.peak_in_flight = tool.in_flight;
    }
  }
}

function countMessage(message) {
  if (typeof message?.method !== "string") return;
  stats.methods[message.method] = (stats.methods[message.method] ?? 0) + 1;
  if (message.method === "tools/call") ++stats.tools_call_received;
}

// Wraps a tool handler: in-flight counts and peaks, and cancellations seen
// through the request's abort signal while the handler runs.
function tracked(name, handler) {
  return async (args, extra) => {
    let tool = toolStats(name);
    ++tool.calls;
    ++tool.in_flight;
    ++stats.in_flight;
    tool.peak_in_flight = Math.max(tool.peak_in_flight, tool.in_flight);
    stats.peak_in_flight = Math.max(stats.peak_in_flight, stats.in_flight);
    const onAbort = () => {
      ++stats.cancelled;
      ++toolStats(name).cancelled;
    };
    extra.signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await handler(args, extra);
    } finally {
      extra.signal.removeEventListener("abort", onAbort);
      tool = toolStats(name); // a reset may have replaced it
      tool.in_flight = Math.max(0, tool.in_flight - 1);
      stats.in_flight = Math.max(0, stats.in_flight - 1);
    }
  };
}

// ---- tools -----------------------------------------------------------------

const text = (value) => ({ content: [{ type: "text", text: value }] });

// Resolves after `ms`, or at once when `signal` aborts; true if it was aborted.
function pause(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(true);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(false);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

const readOnly = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
const notes = [];

// The HTTP response of each POST whose request a handler runs, by
// "<session id>|<JSON-RPC id>", so that a tool can cut the connection its
// call came on while it handles it (see handleMcp).
const postsInFlight = new Map();

// Destroys the socket of the POST carrying this call, before a byte of its
// answer: the client sees its connection closed with no answer, although
// the call was received and handled.
function resetConnection(extra) {
  postsInFlight.get(`${extra.sessionId ?? ""}|${extra.requestId}`)?.socket?.destroy();
}

// Values of a tool's `reset_once` argument already answered by a reset.
const resetOnce = new Set();
function resetFirstTime(tool, value, extra) {
  if (resetOnce.has(`${tool}|${value}`)) return false;
  resetOnce.add(`${tool}|${value}`);
  resetConnection(extra);
  return true;
}
const orders = [];
const statuses = new Map();

const CONDITIONS = ["sunny", "cloudy", "light rain", "windy", "fog", "snow showers"];

function forecastFor(address, date) {
  let hash = 2166136261;
  for (const ch of `${address}|${date}`) hash = Math.imul(hash ^ ch.codePointAt(0), 16777619) >>> 0;
  const condition = CONDITIONS[hash % CONDITIONS.length];
  const high = 5 + (hash % 25);
  return `Forecast for ${address} on ${date}: ${condition}, high ${high} °C, low ${high - 8} °C.`;
}

const builtinTools = [
  {
    name: "echo",
    config: {
      description: "Returns the given text unchanged.",
      inputSchema: { text: z.string().describe("text to return") },
      annotations: readOnly,
    },
    handler: async ({ text: value }) => text(value),
  },
  {
    name: "add",
    config: {
      description: "Adds two numbers and returns the sum as text.",
      inputSchema: { a: z.number(), b: z.number() },
      annotations: readOnly,
    },
    handler: async ({ a, b }) => text(String(a + b)),
  },
  {
    name: "sleep",
    config: {
      description: "Waits the given milliseconds, or less if the call is cancelled.",
      inputSchema: { ms: z.number().int().min(0).max(60000).describe("milliseconds to wait") },
      annotations: readOnly,
    },
    handler: async ({ ms }, extra) => {
      const aborted = await pause(ms, extra.signal);
      return text(aborted ? `cancelled before ${ms} ms` : `slept ${ms} ms`);
    },
  },
  {
    name: "get_forecast",
    config: {
      description: "Weather forecast for an address on a date (deterministic test data).",
      inputSchema: {
        location: z.object({ address: z.string().describe("street address or city") }),
        date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).describe("date as YYYY-MM-DD"),
      },
      annotations: readOnly,
    },
    handler: async ({ location, date }) => text(forecastFor(location.address, date)),
  },
  {
    name: "record_note",
    config: {
      description: "Stores a note (takes 50 ms); not read-only.",
      inputSchema: { note: z.string().describe("the note to store") },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    handler: async ({ note }, extra) => {
      await pause(50, extra.signal);
      notes.push(note);
      return text(`noted #${notes.length}`);
    },
  },
  {
    name: "place_order",
    config: {
      description:
        "Places an order (mutating, not idempotent). outcome: done (default), reset (the server " +
        "cuts the connection while handling the call, after taking the order), stall (waits " +
        "until cancelled, at most 60 s).",
      inputSchema: {
        item: z.string().describe("what to order"),
        outcome: z.enum(["done", "reset", "stall"]).optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    handler: async ({ item, outcome }, extra) => {
      orders.push(item);
      if (outcome === "reset") resetConnection(extra);
      if (outcome === "stall") await pause(60000, extra.signal);
      return text(`ordered ${item} #${orders.length}`);
    },
  },
  {
    name: "set_status",
    config: {
      description:
        "Sets a status (not read-only, idempotent). With reset_once, the first call for a status " +
        "cuts the connection while it is handled (after setting it).",
      inputSchema: { status: z.string(), reset_once: z.boolean().optional() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    handler: async ({ status, reset_once: once }, extra) => {
      statuses.set("current", status);
      if (once) resetFirstTime("set_status", status, extra);
      return text(`status ${status}`);
    },
  },
  {
    name: "lookup_order",
    config: {
      description:
        "Looks up an order (read-only). With reset_once, the first call for an item cuts the " +
        "connection while it is handled.",
      inputSchema: { item: z.string(), reset_once: z.boolean().optional() },
      annotations: readOnly,
    },
    handler: async ({ item, reset_once: once }, extra) => {
      if (once) resetFirstTime("lookup_order", item, extra);
      return text(`${item}: ${orders.filter((ordered) => ordered === item).length} ordered`);
    },
  },
  {
    name: "fail_internal",
    config: {
      description: "Always fails inside the server: answered with JSON-RPC error -32603.",
      inputSchema: {},
      annotations: readOnly,
    },
    // Never reached: see failInternally.
    handler: async () => text("unreachable"),
  },
  {
    name: "text_stats",
    config: {
      description: "Counts the words and characters of a text; answers with structuredContent.",
      inputSchema: { text: z.string() },
      outputSchema: {
        words: z.number().int(),
        chars: z.number().int(),
        longest_word: z.string(),
      },
      annotations: readOnly,
    },
    handler: async ({ text: value }) => {
      const words = value.split(/\s+/).filter((word) => word.length > 0);
      const result = {
        words: words.length,
        chars: [...value].length,
        longest_word: words.reduce((best, word) => (word.length > best.length ? word : best), ""),
      };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    },
  },
];

// Generated tools: names gen_<n>, descriptions built from distinct words so a
// search can tell them apart, four small schema shapes in turn.
const SUBJECTS = ["invoice", "shipment", "calendar", "ticket", "repository", "customer", "payroll",
  "inventory", "sensor", "contract", "playlist", "recipe", "flight", "patient", "warehouse", "budget"];
const VERBS = ["look up", "summarise", "archive", "validate", "export", "rank", "merge", "audit"];

function generatedTool(number) {
  const subject = SUBJECTS[number % SUBJECTS.length];
  const verb = VERBS[Math.floor(number / SUBJECTS.length) % VERBS.length];
  const shapes = [
    { query: z.string().describe(`${subject} search text`) },
    { id: z.number().int().min(0).max(number + 10).describe(`${subject} number`) },
    { flag: z.boolean(), label: z.string().max(40).optional() },
    { items: z.array(z.string()).max((number % 5) + 1).describe(`${subject} names`) },
  ];
  const name = `gen_${number}`;
  return {
    name,
    config: {
      description: `Generated tool ${number}: ${verb} ${subject} records (variant ${number}).`,
      inputSchema: shapes[number % shapes.length],
      annotations: readOnly,
    },
    handler: async () => text(`${name} ok`),
  };
}

// With --maps: search_places as Google Maps Grounding Lite answers it (a
// SearchTextResponse in structuredContent; its PlaceView fields, "...Url"
// links, attribution), always the same two places. Tests look for these
// titles, IDs and URLs where nothing of them may be kept.
const MAPS_PLACES = [
  { id: "ChIJpeerSonnenscheinBakery", title: "Sonnenschein Peer Bakery", cid: "7340019001",
    latitude: 52.5219, longitude: 13.4132 },
  { id: "ChIJpeerBlueStagCoffee", title: "Blue Stag Peer Coffee", cid: "7340019002",
    latitude: 52.5201, longitude: 13.4090 },
];

function placeView(place) {
  return {
    place: `places/${place.id}`,
    id: place.id,
    googleMapsLinks: {
      placeUrl: `https://maps.google.com/?cid=${place.cid}`,
      directionsUrl: `https://www.google.com/maps/dir/?api=1&destination_place_id=${place.id}`,
    },
    attribution: { title: place.title, url: "https://maps.google.com/" },
    location: { latitude: place.latitude, longitude: place.longitude },
  };
}

const mapsTool = {
  name: "search_places",
  config: {
    description: "Searches places (answers like Google Maps Grounding Lite; fixed test data).",
    inputSchema: { textQuery: z.string().describe("what to look for, and where") },
    annotations: readOnly,
  },
  handler: async () => {
    const places = MAPS_PLACES.map(placeView);
    const summary = `Found ${places.length} places: ${MAPS_PLACES.map((p) => p.title).join(", ")}.`;
    return {
      content: [{ type: "text", text: JSON.stringify({ summary, places }) }],
      structuredContent: { summary, places },
    };
  },
};

// With --hostile: markup and script where a server's text reaches a page.
// `hostile_text` carries them in its title and description; the second
// tool's name is itself markup (a node's discovery should skip it).
const HOSTILE_TEXTS = {
  img: "<img src=x onerror=window.__pwned=1>",
  script: "</script><script>window.__pwned=2</script>",
};
const hostileTools = [
  {
    name: "hostile_text",
    config: {
      title: HOSTILE_TEXTS.img,
      description: `Echoes text. ${HOSTILE_TEXTS.script} ${HOSTILE_TEXTS.img}`,
      inputSchema: { text: z.string() },
      annotations: readOnly,
    },
    handler: async ({ text: value }) => text(value),
  },
  {
    name: HOSTILE_TEXTS.img,
    config: { title: HOSTILE_TEXTS.script, description: HOSTILE_TEXTS.script, inputSchema: {}, annotations: readOnly },
    handler: async () => text("ok"),
  },
];

const allTools = [...builtinTools];
if (options.maps) allTools.push(mapsTool);
if (options.hostile) allTools.push(...hostileTools);
for (let number = 0; number < options.tools; ++number) allTools.push(generatedTool(number));

// McpServer always answers tools/list with one page. With --page-size its
// answer is re-served in pages; this reaches into the SDK's handler map (a
// private field) because there is no public way to get McpServer's own list.
function paginateToolsList(mcp, pageSize) {
  const whole = mcp.server._requestHandlers.get("tools/list");
  mcp.server.removeRequestHandler("tools/list");
  mcp.server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
    const { tools } = await whole({ method: "tools/list", params: {} }, extra);
    const cursor = request.params?.cursor;
    const start = cursor === undefined ? 0 : Number(Buffer.from(cursor, "base64url").toString());
    if (!Number.isInteger(start) || start < 0 || start > tools.length)
      throw new McpError(ErrorCode.InvalidParams, "invalid cursor");
    const end = start + pageSize;
    const page = { tools: tools.slice(start, end) };
    if (end < tools.length) page.nextCursor = Buffer.from(String(end)).toString("base64url");
    return page;
  });
}

// With --changing-tools: `late_tool` is registered hidden (before the server
// is connected, so nothing is announced), and `reveal_tool` shows it. The
// tool is enabled by its field rather than enable(), which would announce the
// change a second time on the GET stream, at a moment of its own.
function addChangingTools(mcp) {
  const late = mcp.registerTool(
    "late_tool",
    { description: "Appears when reveal_tool is called.", inputSchema: {}, annotations: readOnly },
    tracked("late_tool", async () => text("late")),
  );
  late.enabled = false;
  mcp.registerTool(
    "reveal_tool",
    { description: "Makes late_tool appear and announces the change.", inputSchema: {} },
    tracked("reveal_tool", async (_args, extra) => {
      const changed = !late.enabled;
      late.enabled = true;
      if (changed) await extra.sendNotification({ method: "notifications/tools/list_changed" });
      return text(changed ? "revealed" : "already revealed");
    }),
  );
}

// McpServer turns whatever a tool handler throws into an isError result; a
// JSON-RPC error comes only from the SDK's protocol layer, which answers a
// request handler that throws with -32603 (internal error). So calls of
// `fail_internal` are taken before McpServer's tools/call handler (a
// private field, as in paginateToolsList) and throw there.
function failInternally(mcp) {
  const call = mcp.server._requestHandlers.get("tools/call");
  mcp.server._requestHandlers.set("tools/call", async (request, extra) => {
    if (request.params?.name === "fail_internal") {
      ++toolStats("fail_internal").calls;
      throw new Error("the tool's backend failed");
    }
    return call(request, extra);
  });
}

function makeServer() {
  const mcp = new McpServer({ name: "voxos-sdk-peer", version: "1.0.0" });
  for (const tool of allTools) mcp.registerTool(tool.name, tool.config, tracked(tool.name, tool.handler));
  if (options.changingTools) addChangingTools(mcp);
  if (options.pageSize > 0) paginateToolsList(mcp, options.pageSize);
  failInternally(mcp);
  return mcp;
}

// Connects a server to a transport and counts every message it receives.
async function connect(mcp, transport) {
  await mcp.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    countMessage(message);
    deliver?.(message, extra);
  };
}

// ---- HTTP ------------------------------------------------------------------


const sessions = new Map(); // Mcp-Session-Id -> transport (stateful mode)

async function handleMcp(req, res) {
  // A POST stream that closes before its answer is complete was dropped by the client.
  if (req.method === "POST")
    res.on("close", () => {
      if (!res.writableFinished) ++stats.http.dropped_posts;
    });

  let body;
  if (req.method === "POST") {
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return sendJson(res, 400, rpcError(-32700, "Parse error"));
    }
  }

  // HTTP 422 for a tools/call whose arguments carry "reject": "422" (any
  // tool): what a server that validates requests in its web framework
  // answers (FastAPI, for one). The SDK answers invalid arguments with an
  // isError result instead, so this one behaviour is written here, in front
  // of it: the peer for the runtime's argument-rejection rules.
  if (body?.method === "tools/call" && body.params?.arguments?.reject === "422") {
    countMessage(body);
    ++stats.http.rejected_422;
    return sendJson(res, 422, { detail: "unprocessable arguments" });
  }
  // The same with a plain HTTP 400 (no JSON-RPC body), as such frameworks
  // also answer: in a session, a client cannot tell it from a lost session.
  if (body?.method === "tools/call" && body.params?.arguments?.reject === "400") {
    countMessage(body);
    ++stats.http.rejected_400;
    return sendJson(res, 400, { detail: "bad request" });
  }

  // Each request a handler may run, for resetConnection.
  if (req.method === "POST" && typeof body?.method === "string" && body.id !== undefined) {
    const key = `${req.headers["mcp-session-id"] ?? ""}|${body.id}`;
    postsInFlight.set(key, res);
    res.on("close", () => {
      if (postsInFlight.get(key) === res) postsInFlight.delete(key);
    });
  }

  if (options.stateless) {
    if (req.method !== "POST") return sendJson(res, 405, rpcError(-32000, "Method not allowed"));
    const mcp = makeServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: options.json,
    });
    res.on("close", () => {
      transport.close();
      mcp.close();
    });
    await connect(mcp, transport);
    return transport.handleRequest(req, res, body);
  }

  const sessionId = req.headers["mcp-session-id"];
  if (sessionId !== undefined) {
    const transport = sessions.get(sessionId);
    if (!transport) {
      ++stats.sessions.unknown;
      if (options.unknownSession400)
        return sendJson(res, 400, { ...rpcError(-32000, "Bad Request: No valid session ID provided"), id: body?.id ?? null });
      return sendJson(res, 404, rpcError(-32001, "Session not found"));
    }
    return transport.handleRequest(req, res, body);
  }
  if (req.method !== "POST" || !isInitializeRequest(body))
    return sendJson(res, 400, rpcError(-32000, "Bad Request: no Mcp-Session-Id and not an initialize request"));

  // A new session: its own server and transport, kept until DELETE or close.
  const mcp = makeServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: options.json,
    onsessioninitialized: (id) => {
      sessions.set(id, transport);
      ++stats.sessions.open;
      ++stats.sessions.opened;
    },
  });
  transport.onclose = () => {
    if (transport.sessionId && sessions.delete(transport.sessionId))
      stats.sessions.open = Math.max(0, stats.sessions.open - 1);
  };
  await connect(mcp, transport);
  return transport.handleRequest(req, res, body);
}

const server = http.createServer(async (req, res) => {
  const path = new URL(req.url, "http://peer").pathname;
  try {
    if (path === "/stats" && req.method === "GET") return sendJson(res, 200, stats);
    if (path === "/stats/reset" && req.method === "POST") {
      resetStats();
      return sendJson(res, 200, stats);
    }
    if (path === "/sessions/forget" && req.method === "POST") {
      const forgotten = [...sessions.values()];
      sessions.clear();
      stats.sessions.forgotten += forgotten.length;
      stats.sessions.open = 0;
      await Promise.all(forgotten.map((transport) => transport.close()));
      return sendJson(res, 200, { forgotten: forgotten.length });
    }
    if (path !== "/mcp") return sendJson(res, 404, { error: "not found" });
    ++stats.http.requests;
    await handleMcp(req, res);
  } catch (error) {
    console.error("sdk_peer: request failed:", error);
    if (!res.headersSent) sendJson(res, 500, rpcError(-32603, "Internal error"));
    else res.destroy();
  }
});

server.listen(options.port, "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
server.on("error", (error) => {
  console.error("sdk_peer: cannot listen:", error.message);
  process.exit(1);
});
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
