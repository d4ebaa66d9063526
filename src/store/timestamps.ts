/** Infinity or -Infinity for PostgreSQL's 'infinity' and '-infinity', which no command writes but SQL can. */
export type StoredTimestamp = Date | number;

export function epochMsOf(at: StoredTimestamp): number {
  return typeof at === 'number' ? at : at.getTime();
}

/** ISO 8601, or 'infinity' / '-infinity' as PostgreSQL spells them: never a throw on a date without end. */
export function instantText(at: StoredTimestamp): string {
  const ms = epochMsOf(at);
  if (Number.isFinite(ms)) return new Date(ms).toISOString();
  return ms > 0 ? 'infinity' : '-infinity';
}

export function optionalInstantText(at: StoredTimestamp | null): string | null {
  return at === null ? null : instantText(at);
}
