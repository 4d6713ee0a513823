// The official TypeScript SDK as an MCP client (Client +
// StreamableHTTPClientTransport), measured against a server beside Voxos's
// own client in the same run.
//
//   node sdk_client_bench.mjs URL [--calls N] [--in-flight K] [--generation 1|2]
//
// --generation 1 (the default): @modelcontextprotocol/sdk 1.x, the 2025-11-25
// handshake. --generation 2: @modelcontextprotocol/client 2.x pinned to the
// 2026-07-28 revision (versionNegotiation { pin }: server/discover, then the
// per-request envelope; no session).
//
// One session; N sequential tools/call of `echo`, then N more with K in
// flight (default 2000 and 8), then a wave of eight `sleep` 200 ms calls
// started together. The server needs the tools `echo` {text} and `sleep` {ms}
// (sdk_peer.mjs has both). Prints one JSON line:
//   seq_calls_per_s, seq_p50_us, seq_p99_us, seq_cpu_s_per_1000,
//   par_calls_per_s, par_p50_us, par_p99_us, par_cpu_s_per_1000,
//   wave_ms, peak_rss_mib (maxRSS of the whole process), and what ran.
// CPU is process.cpuUsage (user + system) of this process over each phase.

import { readFileSync } from "node:fs";


function parseArgs(argv) {
  const args = { url: undefined, calls: 2000, inFlight: 8, generation: 1 };
  for (let idx = 0; idx < argv.length; ++idx) {
    const arg = argv[idx];
    if (arg === "--calls") args.calls = Number(argv[++idx]);
    else if (arg === "--in-flight") args.inFlight = Number(argv[++idx]);
    else if (arg === "--generation") args.generation = Number(argv[++idx]);
    else if (args.url === undefined && !arg.startsWith("--")) args.url = arg;
    else {
      console.error(`sdk_client_bench: unknown argument ${arg}`);
      process.exit(2);
    }
  }
  if (!args.url || !(args.calls > 0) || !(args.inFlight > 0) || ![1, 2].includes(args.generation)) {
    console.error("usage: node sdk_client_bench.mjs URL [--calls N] [--in-flight K] [--generation 1|2]");
    process.exit(2);
  }
  return args;
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1);
  return sorted[Math.max(0, idx)];
}

// Runs `count` echo calls with `width` in flight; returns the figures of the phase.
async function phase(client, count, width) {
  const latenciesUs = [];
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const worker = async () => {
    while (next < count) {
      const callIdx = next++;
      const t0 = process.hrtime.bigint();
      const result = await client.callTool({ name: "echo", arguments: { text: `call ${callIdx}` } });
      if (result.isError) throw new Error(`echo failed: ${JSON.stringify(result)}`);
      latenciesUs.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  latenciesUs.sort((x, y) => x - y);
  return {
    callsPerS: count / seconds,
    p50: percentile(latenciesUs, 0.5),
    p99: percentile(latenciesUs, 0.99),
    cpuPer1000: ((cpu.user + cpu.system) / 1e6) * (1000 / count),
  };
}

const args = parseArgs(process.argv.slice(2));
const modern = args.generation === 2;
const sdkPackage = modern ? "client" : "sdk";
// The 1.x exports map sends "<sdk>/package.json" to a stub; read the real one.
const sdkVersion = JSON.parse(
  readFileSync(
    new URL(`./node_modules/@modelcontextprotocol/${sdkPackage}/package.json`, import.meta.url),
    "utf8",
  ),
).version;

const { Client, StreamableHTTPClientTransport } = modern
  ? await import("@modelcontextprotocol/client")
  : {
      Client: (await import("@modelcontextprotocol/sdk/client/index.js")).Client,
      StreamableHTTPClientTransport: (await import("@modelcontextprotocol/sdk/client/streamableHttp.js"))
        .StreamableHTTPClientTransport,
    };
const client = new Client(
  { name: "sdk-client-bench", version: "1.0.0" },
  modern ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : undefined,
);
const transport = new StreamableHTTPClientTransport(new URL(args.url));
await client.connect(transport);
// What the session speaks, read before close().
const protocolVersion = modern ? client.getNegotiatedProtocolVersion() : transport.protocolVersion;

// Warm-up, not measured: JIT, connection pool; the same as the C++ side's
// (bench/mcp_client_bench.cpp).
await phase(client, Math.min(1000, args.calls), 1);
await phase(client, Math.min(1000, args.calls), args.inFlight);

const sequential = await phase(client, args.calls, 1);
const parallel = await phase(client, args.calls, args.inFlight);

const waveStart = process.hrtime.bigint();
await Promise.all(
  Array.from({ length: 8 }, () => client.callTool({ name: "sleep", arguments: { ms: 200 } })),
);
const waveMs = Number(process.hrtime.bigint() - waveStart) / 1e6;

await client.close();

const round = (value, digits = 0) => Number(value.toFixed(digits));
console.log(
  JSON.stringify({
    client: "typescript-sdk",
    sdk_package: `@modelcontextprotocol/${sdkPackage}`,
    sdk_version: sdkVersion,
    protocol_version: protocolVersion ?? "unknown",
    node_version: process.version,
    calls: args.calls,
    in_flight: args.inFlight,
    seq_calls_per_s: round(sequential.callsPerS),
    seq_p50_us: round(sequential.p50),
    seq_p99_us: round(sequential.p99),
    seq_cpu_s_per_1000: round(sequential.cpuPer1000, 3),
    par_calls_per_s: round(parallel.callsPerS),
    par_p50_us: round(parallel.p50),
    par_p99_us: round(parallel.p99),
    par_cpu_s_per_1000: round(parallel.cpuPer1000, 3),
    wave_ms: round(waveMs, 1),
    peak_rss_mib: round(process.resourceUsage().maxRSS / 1024, 1),
  }),
);
