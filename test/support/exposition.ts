/** Reading Prometheus' text exposition format in tests. */

/** Metric family names in a text exposition, with the sample names a histogram or summary adds. */
export function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = '', type] = match;
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

/** Samples of `name` in a text exposition, as label text ('{a="b"}' or '') to value. */
export function samples(exposition: string, name: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^(\S+?)(\{.*\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    found.set(match[2] ?? '', Number(match[3]));
  }
  return found;
}
