const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

const twoDigits = (value: number): string => String(value).padStart(2, '0');

/**
 * An instant as people read it in a sentence, "29 Nov 2026 10:14 UTC": the day first and the month in
 * letters, so that no reader takes 03/04 for the wrong month. 'infinity' (a date without end that SQL
 * can write) reads as "never"; anything else that is no date is quoted as it is.
 */
export function instantWords(iso: string): string {
  if (iso === 'infinity') return 'never';
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  const at = new Date(ms);
  return `${at.getUTCDate()} ${MONTHS[at.getUTCMonth()]} ${at.getUTCFullYear()} ${twoDigits(at.getUTCHours())}:${twoDigits(at.getUTCMinutes())} UTC`;
}
