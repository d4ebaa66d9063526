/** A positive decimal with no sign, no leading zero and no spaces: site, key and brownout ids. */
const POSITIVE_ID = /^[1-9][0-9]{0,18}$/;
const BIGINT_MAX = 9_223_372_036_854_775_807n;
const BIGINT_MAX_DIGITS = BIGINT_MAX.toString().length;
/** PostgreSQL's bigint, as people read it in a refusal. */
export const POSITIVE_ID_MAX = BIGINT_MAX.toString();

/** The id in canonical form, within PostgreSQL's bigint, for text that is one; else undefined. */
export function canonicalPositiveId(text: string): string | undefined {
  if (!POSITIVE_ID.test(text)) return undefined;
  // Only a 19-digit id can pass BIGINT_MAX; a BigInt for every check's id is garbage.
  return text.length < BIGINT_MAX_DIGITS || BigInt(text) <= BIGINT_MAX ? text : undefined;
}
