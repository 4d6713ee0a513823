// Judges the checks a conformance run wrote (`-o DIR`), scenario by scenario,
// more strictly than the runner's `--requirements` exit code, which fails
// only on a FAILURE in a scored scenario:
//   - a scenario fails on any FAILURE or WARNING check (a missed "SHOULD" is
//     a WARNING);
//   - a scenario passes only if every check id `required` names for it is
//     SUCCESS: the suite passes a scenario whose steps never ran (an idle
//     client "passes" several), so a pass alone proves nothing;
//   - every scenario that ran must be named in `required` (a new scenario in
//     an upgraded suite is looked at, not waved through);
//   - the expected-failures list is a ratchet: a listed scenario that passes
//     fails the test (remove it), an unlisted one that fails fails it too.
// Check ids (or names, where several checks share an id): tests/peers/CONFORMANCE.md, "Authorization scenarios".
//   node judge_client_checks.mjs OUTPUT_DIR REVISION EXPECTED_FAILURES_YML
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const [outDir, revision, expectedFile] = process.argv.slice(2);

const happy = [
  "authorization-server-metadata",
  "client-registration",
  "authorization-request",
  "token-request",
  "pkce-verifier-matches-challenge",
  "resource-parameter-matches-prm",
  "valid-bearer-token",
];
const resourceChecks = [
  "token-endpoint-auth-method",
  "resource-parameter-in-authorization",
  "resource-parameter-in-token",
  "resource-parameter-consistency",
  "resource-parameter-matches-prm",
  "valid-bearer-token",
];
const stateless = revision === "2026-07-28";
const required = {
  initialize: ["mcp-client-initialization"],
  tools_call: ["tool-add-numbers"],
  "sse-retry": ["client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"],
  "elicitation-sep1034-client-defaults": [
    "client-elicitation-sep1034-string-default",
    "client-elicitation-sep1034-integer-default",
    "client-elicitation-sep1034-number-default",
    "client-elicitation-sep1034-enum-default",
    "client-elicitation-sep1034-boolean-default",
  ],
  "request-metadata": [
    "sep-2575-http-client-sends-version-header",
    "sep-2575-client-populates-meta",
    "sep-2575-client-sends-client-info",
    "sep-2575-http-version-header-matches-meta",
  ],
  "sep-2322-client-request-state": [
    "sep-2322-client-request-state-echoed",
    "sep-2322-client-jsonrpc-id-different",
    "sep-2322-client-no-state-omitted",
    "sep-2322-client-parallel-isolation",
  ],
    // By check name: these checks share one id.
  "http-standard-headers": [
    "ClientMcpMethodHeader_tools_list",
    "ClientMcpMethodHeader_tools_call",
    "ClientMcpNameHeader_tools_call",
  ],
  "http-custom-headers": ["sep-2243-client-mirrors-designated-params", "sep-2243-client-encode-values"],
  "http-invalid-tool-headers": ["sep-2243-client-reject-invalid-tool"],
  "json-schema-ref-no-deref": ["sep-2106-no-network-ref-deref"],
  "json-schema-2020-12-preservation": [],
  "auth/metadata-default": ["prm-pathbased-requested", ...happy],
  "auth/metadata-var1": ["prm-pathbased-requested", ...happy],
  "auth/metadata-var2": happy,
  "auth/metadata-var3": happy,
  "auth/basic-cimd": ["cimd-client-id-used", "token-request", "valid-bearer-token"],
  "auth/scope-from-www-authenticate": ["scope-from-www-authenticate", "valid-bearer-token"],
  "auth/scope-from-scopes-supported": ["scope-from-scopes-supported", "valid-bearer-token"],
  "auth/scope-omitted-when-undefined": ["scope-omitted-when-undefined", "valid-bearer-token"],
  "auth/scope-step-up": [
    "scope-step-up-initial",
    "scope-step-up-escalation",
    ...(stateless ? ["sep-2350-scope-union-on-reauth"] : []),
    "valid-bearer-token",
  ],
  "auth/scope-retry-limit": ["scope-retry-limit"],
  "auth/token-endpoint-auth-basic": resourceChecks,
  "auth/token-endpoint-auth-post": resourceChecks,
  "auth/token-endpoint-auth-none": resourceChecks,
  "auth/pre-registration": ["pre-registration-auth", "valid-bearer-token"],
  "auth/resource-mismatch": ["prm-pathbased-requested", "resource-mismatch-rejected"],
  "auth/offline-access-scope": ["authorization-request", "valid-bearer-token"],
  "auth/offline-access-not-supported": ["sep-2207-offline-access-not-requested", "valid-bearer-token"],
  "auth/authorization-server-migration": [
    "sep-2352-reregister-on-as-change",
    "sep-2352-no-reuse-on-as-change",
    "sep-2352-no-cross-as-credential-reuse",
    "valid-bearer-token",
  ],
  "auth/iss-supported": ["sep-2468-client-compare-iss-supported", "valid-bearer-token"],
  "auth/iss-not-advertised": ["sep-2468-client-proceed-no-iss", "valid-bearer-token"],
  "auth/iss-supported-missing": ["sep-2468-client-reject-missing-iss"],
  "auth/iss-wrong-issuer": ["sep-2468-client-compare-iss-supported"],
  "auth/iss-unexpected": ["sep-2468-client-compare-iss-unadvertised"],
  "auth/iss-normalized": ["sep-2468-client-no-normalization"],
  "auth/metadata-issuer-mismatch": ["sep-2468-client-validate-metadata-issuer"],
  "auth/client-credentials-jwt": ["client-credentials-jwt-verified", "valid-bearer-token"],
  "auth/client-credentials-basic": ["client-credentials-basic-auth", "valid-bearer-token"],
  "auth/enterprise-managed-authorization": [
    "complete-flow-token-exchange",
    "complete-flow-jwt-bearer",
    "valid-bearer-token",
  ],
  "auth/wif-jwt-bearer": ["wif-assertion-verified", "valid-bearer-token"],
  "auth/dpop": [
    "sep-1932-client-token-request-proof",
    "sep-1932-client-dpop-auth-scheme",
    "sep-1932-client-fresh-proof",
  ],
  "auth/dpop-nonce": [
    "sep-1932-client-token-request-proof",
    "sep-1932-client-dpop-auth-scheme",
    "sep-1932-client-fresh-proof",
    "sep-1932-client-as-nonce",
    "sep-1932-client-rs-nonce",
  ],
};

// The expected failures: "client:" then "  - name" lines.
const expected = new Set();
let inClient = false;
for (const line of readFileSync(expectedFile, "utf8").split("\n")) {
  if (/^client:/.test(line)) inClient = true;
  else if (/^\S/.test(line)) inClient = false;
  const item = inClient && line.match(/^\s*-\s*([^\s#]+)/);
  if (item) expected.add(item[1]);
}

// Every checks.json under outDir: its scenario is its folder's path without
// the run's time suffix.
const found = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name === "checks.json")
      found.push({
        scenario: relative(outDir, dir).replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, ""),
        checks: JSON.parse(readFileSync(path, "utf8")),
      });
  }
};
walk(outDir);

let bad = 0;
const complain = (text) => {
  console.error(`conformance ${revision}: ${text}`);
  bad += 1;
};
if (found.length === 0) complain("no scenario wrote checks");
const ran = new Set();
for (const { scenario, checks } of found) {
  ran.add(scenario);
  if (!(scenario in required)) {
    complain(`${scenario}: ran, but this test does not know its checks`);
    continue;
  }
  const problems = checks
    .filter((c) => c.status === "FAILURE" || c.status === "WARNING")
    .map((c) => `${c.id} ${c.status}`);
  for (const id of required[scenario])
    if (!checks.some((c) => (c.id === id || c.name === id) && c.status === "SUCCESS")) problems.push(`${id} not SUCCESS`);
  const failed = problems.length > 0;
  if (failed && !expected.has(scenario)) complain(`${scenario}: ${problems.join(", ")}`);
  else if (!failed && expected.has(scenario))
    complain(`${scenario}: passes but is listed in ${expectedFile}: remove it`);
  else console.log(`conformance ${revision}: ${scenario}: ${failed ? "fails, as listed" : "passes"}`);
}
for (const scenario of expected)
  if (!ran.has(scenario)) complain(`${scenario}: listed in ${expectedFile} but did not run`);
process.exit(bad === 0 ? 0 : 1);
