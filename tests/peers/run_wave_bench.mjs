// The official TypeScript SDK client (Client + StreamableHTTPClientTransport)
// doing what bench/run_bench.cpp times through Voxos's runtime, against the
// same server in the same run: one `sleep` call vs a wave of eight started
// together with Promise.all, and sequential `echo` calls.
// (sdk_client_bench.mjs times one wave after its throughput phases, with no
// single call to compare it with and one sample only.)
//
//   node run_wave_bench.mjs URL [--rounds N] [--ms N] [--calls N]
//
// One session; a warm-up of 50 `echo` calls; then --rounds (default 5)
// rounds of one `sleep` {ms} call and a wave of eight (default 200 ms);
// then --calls (default 1000) sequential `echo` calls. The server needs the
// tools `echo` {text} and `sleep` {ms} (sdk_peer.mjs has both). Prints one
// JSON line: {"client","sdk_version","node_version","rounds","ms",
// "single_ms","wave_ms" (medians over the rounds),"calls","echo_p50_us",
// "echo_p99_us"}.

import { readFileSync } from "node:fs";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

function parseArgs(argv) {
  const args = { url: undefined, rounds: 5, ms: 200, calls: 1000 };
  for (let idx = 0; idx < argv.length; ++idx) {
    const arg = argv[idx];
    if (arg === "--rounds") args.rounds = Number(argv[++idx]);
    else if (arg === "--ms") args.ms = Number(argv[++idx]);
    else if (arg === "--calls") args.calls = Number(argv[++idx]);
    else if (args.url === undefined && !arg.startsWith("--")) args.url = arg;
    else {
      console.error(`run_wave_bench: unknown argument ${arg}`);
      process.exit(2);
    }
  }
  if (!args.url || !(args.rounds > 0) || !(args.ms >= 0) || !(args.calls > 0)) {
    console.error("usage: node run_wave_bench.mjs URL [--rounds N] [--ms N] [--calls N]");
    process.exit(2);
  }
  return args;
}

// The value at `fraction` of sorted samples (the same rank rule as run_bench).
function percentile(sorted, fraction) {
  const idx = Math.round(fraction * (sorted.length - 1));
  return sorted[Math.min(sorted.length - 1, Math.max(0, idx))];
}

const args = parseArgs(process.argv.slice(2));
// The SDK's exports map sends "<sdk>/package.json" to a stub; read the real one.
const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
).version;

const client = new Client({ name: "run-wave-bench", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(args.url)));

const echo = async (callIdx) => {
  const result = await client.callTool({ name: "echo", arguments: { text: `call ${callIdx}` } });
  if (result.isError) throw new Error(`echo failed: ${JSON.stringify(result)}`);
};
const sleep = async () => {
  const result = await client.callTool({ name: "sleep", arguments: { ms: args.ms } });
  if (result.isError) throw new Error(`sleep failed: ${JSON.stringify(result)}`);
};
const msSince = (start) => Number(process.hrtime.bigint() - start) / 1e6;

// Warm-up, not measured: JIT, connection pool.
for (let callIdx = 0; callIdx < 50; ++callIdx) await echo(callIdx);

const singles = [];
const waves = [];
for (let round = 0; round < args.rounds; ++round) {
  let start = process.hrtime.bigint();
  await sleep();
  singles.push(msSince(start));
  start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: 8 }, sleep));
  waves.push(msSince(start));
}

const echoUs = [];
for (let callIdx = 0; callIdx < args.calls; ++callIdx) {
  const start = process.hrtime.bigint();
  await echo(callIdx);
  echoUs.push(msSince(start) * 1000);
}

await client.close();

const sorted = (xs) => [...xs].sort((x, y) => x - y);
const round = (value, digits = 0) => Number(value.toFixed(digits));
console.log(
  JSON.stringify({
    client: "typescript-sdk",
    sdk_version: sdkVersion,
    node_version: process.version,
    rounds: args.rounds,
    ms: args.ms,
    single_ms: round(percentile(sorted(singles), 0.5), 2),
    wave_ms: round(percentile(sorted(waves), 0.5), 2),
    calls: args.calls,
    echo_p50_us: round(percentile(sorted(echoUs), 0.5)),
    echo_p99_us: round(percentile(sorted(echoUs), 0.99)),
  }),
);
