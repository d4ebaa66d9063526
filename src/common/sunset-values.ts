// The sunset policy's values, in the environment and in `sitekey-authz sunset set` alike.

// A calendar date (midnight UTC), or a date and time with Z or an offset: no guessing at a time zone.
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))?$/;
// Printable ASCII but for what would end the Link header's <…> or quoted text: space, ", < and >.
const GUIDE_URL_CHARACTERS = /^[\x21\x23-\x3b\x3d\x3f-\x7e]+$/;

/** Date parsing rolls 2027-02-30 over into March; a typo must be refused instead. */
function isCalendarDate(text: string): boolean {
  const [year = 0, month = 0, day = 0] = text.slice(0, 10).split('-').map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth;
}

/** An ISO 8601 date-time with a zone, or (`dateAlone`) a date meaning midnight UTC, in epoch ms. */
export function parseInstant(text: string, options: { readonly dateAlone: boolean }): number | undefined {
  if (!ISO_INSTANT.test(text) || !isCalendarDate(text)) return undefined;
  if (text.length === 10 && !options.dateAlone) return undefined;
  const at = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
  return Number.isNaN(at) ? undefined : at;
}

/** Why `text` cannot be the guide's URL, which goes into the Link header between < and > and into 105 messages. */
export function guideUrlProblem(text: string): string | undefined {
  if (!GUIDE_URL_CHARACTERS.test(text)) {
    return 'must be printable ASCII without spaces, quotes, < or > (percent-encode other characters, e.g. %C3%BC for ü)';
  }
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    return 'is not a URL; expected one such as https://developers.example.com/migrate';
  }
  if (parsed.protocol !== 'https:') return `must be an https:// URL, not ${parsed.protocol}//`;
  if (parsed.hostname === '') return 'names no host; expected one such as https://developers.example.com/migrate';
  return undefined;
}
