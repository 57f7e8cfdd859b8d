// Run names a person can read: the prefix every listed run shares (a date, an experiment folder) is dropped, cut
// at a separator so no word is split, never the part where the names differ; the whole name stays on hover. The
// dashboard sets the names of its run list once per list (setRunNames); every view asks displayRunName(run).

// Where a shared prefix may end: after one of these characters ("." is left out: it sits inside numbers).
const SEPARATORS = new Set(["/", "\\", "_", "-", " ", ":"]);
// A shared prefix shorter than this is kept: names are shown whole, so dropping "run_" saves little and hides a word;
// a date ("20261206-"), an experiment folder or a sweep's common settings are worth leaving out.
const MIN_PREFIX = 8;

/**
 * {prefix, names: Map run -> shown name} for a list of runs. The prefix is the longest one every run starts with
 * that ends at a separator and leaves something of every name; "" when the runs share none (or there is one run).
 */
export function shortRunNames(runs) {
  const list = [...runs].map(String);
  let prefix = "";
  if (list.length >= 2) {
    let common = list[0];
    for (const name of list) {
      let i = 0;
      while (i < common.length && i < name.length && common[i] === name[i]) i++;
      common = common.slice(0, i);
      if (!common) break;
    }
    // Back off to the last separator, and leave at least one character of every name.
    const shortest = Math.min(...list.map((n) => n.length));
    let end = Math.min(common.length, shortest - 1);
    while (end > 0 && !SEPARATORS.has(common[end - 1])) end--;
    prefix = end >= MIN_PREFIX ? common.slice(0, end) : "";
  }
  const names = new Map(list.map((r) => [r, prefix ? r.slice(prefix.length) : r]));
  return { prefix, names };
}

let current = { prefix: "", names: new Map() };

/** The run list the names are shortened for (the dashboard's, once per list). */
export function setRunNames(runs) {
  current = shortRunNames(runs);
  return current;
}

/** The name to show for a run: without the prefix the listed runs share; the run itself when it is not listed. */
export function displayRunName(run) {
  return current.names.get(String(run)) || String(run);
}

/** The prefix the listed runs share ("" when none is dropped). */
export function sharedRunPrefix() {
  return current.prefix;
}

/** A name split after each separator ("20261206-", "lr0.001_"), so a long name wraps there rather than mid-word. */
export function nameParts(name) {
  return String(name).match(/[^/\\_\- :]*[/\\_\- :]?/g).filter(Boolean);
}
