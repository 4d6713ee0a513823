// Command-line flags of the Node test peers: each bad flag ends the peer
// with exit code 2 and a line naming it.

/// The value after `flag` (`text`, undefined when the command line ended).
export function flagValue(peer, flag, text) {
  if (text === undefined) {
    console.error(`${peer}: ${flag} wants a value`);
    process.exit(2);
  }
  return text;
}

/// The integer in min..max after `flag`.
export function flagInteger(peer, flag, text, min = 0, max = Number.MAX_SAFE_INTEGER) {
  const number = Number(flagValue(peer, flag, text));
  if (!Number.isInteger(number) || number < min || number > max) {
    console.error(`${peer}: ${flag} wants an integer in ${min}..${max}, got ${text}`);
    process.exit(2);
  }
  return number;
}

export function unknownFlag(peer, arg) {
  console.error(`${peer}: unknown argument ${arg}`);
  process.exit(2);
}
