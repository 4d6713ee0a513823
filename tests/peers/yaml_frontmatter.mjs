// Parses the YAML frontmatter of SKILL.md texts with a real YAML parser (the
// npm `yaml` package, the one the conformance suite's Skills scenarios use),
// once as YAML 1.2 and once as YAML 1.1 (where more plain scalars are not
// strings: yes, no, on, off, 0b1, 1_000, sexagesimals). The package reads
// NEL, U+2028 and U+2029 the same in both, so escaping those is checked by
// the C++ tests alone.
//   node yaml_frontmatter.mjs FILE
// FILE holds a JSON array of SKILL.md texts. Prints one JSON line:
// {"yaml1.2": [...], "yaml1.1": [...]}, each item the parsed frontmatter
// object, or {"error": "..."} when a text has no frontmatter block or it does
// not parse. The block is the lines between a first line `---` and the next
// line `---`, as the Agent Skills format has it.
import { readFileSync } from "node:fs";
import { parse } from "yaml";

const texts = JSON.parse(readFileSync(process.argv[2], "utf8"));

function frontmatter(text, version) {
  const lines = text.split("\n");
  if (lines[0] !== "---") return { error: "no opening ---" };
  const close = lines.indexOf("---", 1);
  if (close < 0) return { error: "no closing ---" };
  try {
    return parse(lines.slice(1, close).join("\n"), { version, uniqueKeys: true, strict: true });
  } catch (error) {
    return { error: String(error.message) };
  }
}

process.stdout.write(
  JSON.stringify({
    "yaml1.2": texts.map((text) => frontmatter(text, "1.2")),
    "yaml1.1": texts.map((text) => frontmatter(text, "1.1")),
  }) + "\n",
);
