// The judgement shared by judge_client_checks.mjs and
// judge_server_checks.mjs: the checks a conformance run wrote (`-o DIR`),
// scenario by scenario, more strictly than the runner's `--requirements`
// exit code, which fails only on a FAILURE in a scored scenario:
//   - a scenario fails on any FAILURE or WARNING check (a missed "SHOULD" is
//     a WARNING);
//   - a scenario passes only if every check id `required` names for it is
//     SUCCESS (a check's name stands in where several share an id): the
//     suite passes a scenario whose steps never ran, so a pass alone proves
//     nothing, and a scenario that requires nothing cannot pass;
//   - every scenario that ran must be named in `required` (a new scenario in
//     an upgraded suite is looked at, not waved through);
//   - the expected-failures list (the YAML list under `mode:`) is a ratchet:
//     a listed scenario that passes fails the test (remove it), an unlisted
//     one that fails fails it too, and a listed one that did not run as well;
//   - every scenario in `mustRun` (if given) must have written checks.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/// The scenario names listed under `mode:` ("client" or "server").
function expectedFailures(expectedFile, mode) {
  const expected = new Set();
  let inMode = false;
  for (const line of readFileSync(expectedFile, "utf8").split("\n")) {
    if (new RegExp(`^${mode}:`).test(line)) inMode = true;
    else if (/^\S/.test(line)) inMode = false;
    const item = inMode && line.match(/^\s*-\s*([^\s#]+)/);
    if (item) expected.add(item[1]);
  }
  return expected;
}

/// Every checks.json under outDir: its scenario is its folder's path without
/// the run's time suffix (and, for server runs, the "server-" prefix).
function runs(outDir, mode) {
  const found = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name === "checks.json") {
        let scenario = relative(outDir, dir).replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
        if (mode === "server") scenario = scenario.replace(/^server-/, "");
        found.push({ scenario, checks: JSON.parse(readFileSync(path, "utf8")) });
      }
    }
  };
  walk(outDir);
  return found;
}

/// Judges the run; exits 0 if everything is as the ratchet says, else 1.
export function judge({ outDir, revision, expectedFile, mode, required, mustRun = [] }) {
  const expected = expectedFailures(expectedFile, mode);
  const found = runs(outDir, mode);
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
    if (required[scenario].length === 0) problems.push("no check is required of it");
    for (const id of required[scenario])
      if (!checks.some((c) => (c.id === id || c.name === id) && c.status === "SUCCESS"))
        problems.push(`${id} not SUCCESS`);
    const failed = problems.length > 0;
    if (failed && !expected.has(scenario)) complain(`${scenario}: ${problems.join(", ")}`);
    else if (!failed && expected.has(scenario))
      complain(`${scenario}: passes but is listed in ${expectedFile}: remove it`);
    else console.log(`conformance ${revision}: ${scenario}: ${failed ? "fails, as listed" : "passes"}`);
  }
  for (const scenario of expected)
    if (!ran.has(scenario)) complain(`${scenario}: listed in ${expectedFile} but did not run`);
  for (const scenario of mustRun)
    if (!ran.has(scenario)) complain(`${scenario}: wrote no checks (it did not run)`);
  process.exit(bad === 0 ? 0 : 1);
}
