// An example agent host over HTTP+JSON (Node 20+, no dependencies): starts a
// run on a Voxos node, lets a scripted stand-in for a model decide a round
// of tool calls from the run's tool view, posts them, reports the turn's
// text and finishes the run. A real model plugs in at `scriptedModel`.
//
//   VOXOS_ADMIN_TOKEN=... node host.mjs demo --url http://127.0.0.1:7100 \
//       --mcp http://127.0.0.1:PORT/mcp [--address "Alexanderplatz 1, Berlin"]
//     Sets up a tenant that uses the MCP server at --mcp (which must be
//     registered in the node's config for the "mcp" purpose), then runs a
//     seven-day forecast and prints the wave, the outputs and the audit.
//
//   VOXOS_TOKEN=... node host.mjs forecast --url URL --agent ID [--address A] [--think-ms N]
//     Runs the forecast for an existing tenant whose agent may call get_forecast.
//
// --think-ms N: the stand-in model takes N ms before each round of calls, as
// a real model takes its time (default 0); a watcher then sees the run live
// before its first wave (the console's Runs page, in its browser test).
//
// The host holds its run through the run's activity stream (`?hold=1`): if
// this process goes away mid-run, the node cancels the run and every call in
// flight. Activity events are printed as they arrive.
//
// Exit status: 0 when every call of the forecast answered "ok".

const args = process.argv.slice(2);
const command = args[0];
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
};
const base = option("url", "http://127.0.0.1:7100");
const address = option("address", "Alexanderplatz 1, Berlin");
const thinkMs = Number(option("think-ms", "0"));
if (!Number.isInteger(thinkMs) || thinkMs < 0 || thinkMs > 600_000)
  throw new Error("--think-ms: an integer from 0 to 600000");

async function call(method, path, token, body) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status}: ${text}`);
  return json;
}

// The tenant, its token, an MCP server tested and allowlisted, and grants
// for the default agent.
async function setUp(adminToken, mcpUrl) {
  const tenant = await call("POST", "/v1/admin/tenants", adminToken, { name: "Example host" });
  const issued = await call("POST", `/v1/admin/tenants/${tenant.tenant_id}/tokens`, adminToken, {
    label: "example host",
  });
  const token = issued.token;
  const [agent] = await call("GET", "/v1/agents", token);
  const server = await call("POST", "/v1/servers", token, { url: mcpUrl, label: "Weather" });
  await call("POST", `/v1/servers/${server.server_id}/test`, token);
  const tools = ["get_forecast", "echo"];
  await call("PATCH", `/v1/servers/${server.server_id}`, token, {
    enabled: true,
    trusted: true,
    allowed_tools: tools,
  });
  // Enabling goes back through the connection test.
  await call("POST", `/v1/servers/${server.server_id}/test`, token);
  for (const tool of tools)
    await call("PUT", `/v1/agents/${agent.agent_id}/grants`, token, {
      server_id: server.server_id,
      tool,
      decision: "allow",
    });
  return { token, agentId: agent.agent_id, serverId: server.server_id };
}

// Opens the run's activity stream as its host; prints wave events. Returns
// a function that lets go of the stream (after the run has ended).
async function holdRun(token, runId) {
  const controller = new AbortController();
  const res = await fetch(`${base}/v1/runs/${runId}/events?hold=1`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  if (!res.ok) throw new Error(`GET events: HTTP ${res.status}: ${await res.text()}`);
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of res.body) {
      buffered += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = block.split("\n").find((line) => line.startsWith("data: "));
        if (!block.startsWith("event: activity") || !data) continue;
        const event = JSON.parse(data.slice(6));
        if (event.event === "wave")
          console.log(`  activity: round ${event.round} wave of ${event.calls.length} calls sent`);
      }
    }
  })().catch(() => {});
  return async () => {
    controller.abort();
    await reading;
  };
}

const isoDay = (offset) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

// The scripted stand-in for a model: one round of seven get_forecast calls,
// then an answer built from the outputs.
const scriptedModel = {
  user: `What is the weather at ${address} for the next seven days?`,
  nextRound(view, round) {
    if (round > 0) return null;
    const tool = view.direct.find((entry) => entry.tool === "get_forecast");
    if (!tool) return null;
    return Array.from({ length: 7 }, (_, day) => ({
      call_id: `call_${day + 1}`,
      name: tool.model_name,
      arguments: { location: { address }, date: isoDay(day) },
    }));
  },
  answer(outputs) {
    const lines = outputs.map((out) =>
      out.status === "ok" ? out.output.content[0].text : `(${out.status}) ${out.output.message}`,
    );
    return `Here is the seven-day forecast for ${address}:\n${lines.join("\n")}`;
  },
};

async function forecast(token, agentId) {
  const run = await call("POST", "/v1/runs", token, {
    agent_id: agentId,
    channel: "owner_text_chat",
  });
  console.log(`run ${run.run_id} in chat ${run.chat_id}: ${run.view.direct.length} tools in view`);
  const letGo = await holdRun(token, run.run_id);
  console.log(`user: ${scriptedModel.user}`);
  const seen = [];
  for (let round = 0; ; ++round) {
    const calls = scriptedModel.nextRound(run.view, round);
    if (!calls) break;
    if (thinkMs > 0) await new Promise((resolve) => setTimeout(resolve, thinkMs));
    const answered = await call("POST", `/v1/runs/${run.run_id}/tool-calls`, token, { calls });
    const health = await call("GET", `/v1/runs/${run.run_id}/health`, token);
    console.log(
      `round ${round + 1}: ${calls.length} calls in ${health.waves} wave(s), ` +
        `at most ${health.peak_wave} in flight together`,
    );
    for (const out of answered.outputs) {
      const text = out.status === "ok" ? out.output.content[0].text : out.output.message;
      console.log(`  ${out.call_id} ${out.status}: ${text}`);
      seen.push(out);
    }
  }
  const answer = scriptedModel.answer(seen);
  console.log(`assistant: ${answer}`);
  await call("POST", `/v1/runs/${run.run_id}/turns`, token, {
    user: scriptedModel.user,
    assistant: answer,
  });
  await call("POST", `/v1/runs/${run.run_id}/finish`, token);
  await letGo();
  const audit = await call("GET", "/v1/audit?limit=200", token);
  const mine = audit.filter((row) => row.run_id === run.run_id && row.phase === "execute");
  console.log(`audit: ${mine.length} execution decisions for this run`);
  for (const row of mine) console.log(`  ${row.tool} on ${row.server_id}: ${row.reason}`);
  return seen.length === 7 && seen.every((out) => out.status === "ok");
}

async function main() {
  if (command === "demo") {
    const adminToken = process.env.VOXOS_ADMIN_TOKEN;
    const mcpUrl = option("mcp");
    if (!adminToken || !mcpUrl) throw new Error("demo needs VOXOS_ADMIN_TOKEN and --mcp URL");
    const { token, agentId } = await setUp(adminToken, mcpUrl);
    return forecast(token, agentId);
  }
  if (command === "forecast") {
    const token = process.env.VOXOS_TOKEN;
    const agentId = option("agent");
    if (!token || !agentId) throw new Error("forecast needs VOXOS_TOKEN and --agent ID");
    return forecast(token, agentId);
  }
  throw new Error("usage: node host.mjs demo|forecast [options] (see the header)");
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (err) => {
    console.error(`error: ${err.message}`);
    process.exit(1);
  },
);
