/** The body members that carry credentials (spec, Authentication 4). */
export type CredentialField = 'siteid' | 'apikey';
export const CREDENTIAL_FIELDS: readonly CredentialField[] = ['siteid', 'apikey'];

const ASCII = /^[\x00-\x7f]*$/;
const COMBINING_MARK = /\p{M}/gu;

/**
 * A name as a case-insensitive parser sees it: Go's encoding/json reads `ſiteid` (U+017F) and `apiKey`
 * (Kelvin sign) as siteid and apikey. Upper- then lower-casing folds those, NFKD the compatibility forms,
 * and dropping marks the dotted `İ`; stricter than any one parser, it only denies a body with two spellings.
 */
export function folded(name: string): string {
  if (ASCII.test(name)) return name.toLowerCase();
  return name.normalize('NFKD').replace(COMBINING_MARK, '').toUpperCase().toLowerCase();
}

// A name's folded form is its code points' folded forms in a row (NFKD decomposes each alone; the only
// context rule of case mapping, a final sigma, gives no ASCII): a reader follows a name against siteid
// and apikey one code point at a time and gives up at the first that leaves both, in a hostile body at once.
const SITEID = 'siteid';
const APIKEY = 'apikey';
const FIELD_LENGTH = 6;
const FIELD_LETTERS_ONLY = /^[siteidapky]*$/;
// Every code point that folds to nothing or to letters of the two fields is a mark or of the Latin
// or Common script (test/decision/credential-field.test.ts checks each one): no other needs folding.
const MAY_FOLD_TO_LETTERS = /[\p{M}\p{Script=Latin}\p{Script=Common}]/uy;

const BACKSLASH = 0x5c;

function hexValue(c: number): number {
  return c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57;
}

function escapedUnit(text: string, at: number): number {
  return (
    (hexValue(text.charCodeAt(at + 2)) << 12) |
    (hexValue(text.charCodeAt(at + 3)) << 8) |
    (hexValue(text.charCodeAt(at + 4)) << 4) |
    hexValue(text.charCodeAt(at + 5))
  );
}

function startsAt(pattern: RegExp, text: string, at: number): boolean {
  pattern.lastIndex = at;
  return pattern.test(text);
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Reads the member names of one JSON text, folding each distinct character outside ASCII once. */
class NameReader {
  private folds: Map<number, string | null> | undefined;

  constructor(private readonly text: string) {}

  /** Its folded form if empty or field letters only, else null; `written`: where it stands unescaped, or -1. */
  private fieldLettersOf(codePoint: number, written: number): string | null {
    const known = this.folds?.get(codePoint);
    if (known !== undefined) return known;
    // Most characters are refused by their script, where they stand, without making a string of them.
    if (written >= 0 && !startsAt(MAY_FOLD_TO_LETTERS, this.text, written)) return null;
    const character = String.fromCodePoint(codePoint);
    if (written < 0 && !startsAt(MAY_FOLD_TO_LETTERS, character, 0)) return null;
    const form = folded(character);
    const letters = FIELD_LETTERS_ONLY.test(form) ? form : null;
    (this.folds ??= new Map()).set(codePoint, letters);
    return letters;
  }

  /** The credential field the name from `start` to `end` folds to, without decoding or folding it. */
  fieldOf(start: number, end: number): CredentialField | undefined {
    const { text } = this;
    const last = end - 1;
    let siteid = true;
    let apikey = true;
    let at = 0;
    let i = start + 1;
    while (i < last) {
      const c = text.charCodeAt(i);
      const written = c === BACKSLASH ? -1 : i;
      let codePoint = c;
      if (c === BACKSLASH) {
        // Only \uXXXX can spell a field letter; \" \\ \/ \b \f \n \r \t are ASCII that no field holds.
        if (text.charCodeAt(i + 1) !== 0x75) return undefined;
        codePoint = escapedUnit(text, i);
        i += 6;
      } else {
        i++;
      }
      if (isHighSurrogate(codePoint) && i < last) {
        // A high surrogate pairs with a low one right after it, each written raw or escaped.
        const escaped = text.charCodeAt(i) === BACKSLASH;
        const low = escaped ? (text.charCodeAt(i + 1) === 0x75 ? escapedUnit(text, i) : -1) : text.charCodeAt(i);
        if (isLowSurrogate(low)) {
          codePoint = 0x10000 + ((codePoint - 0xd800) << 10) + (low - 0xdc00);
          i += escaped ? 6 : 1;
        }
      }

      if (codePoint < 0x80) {
        // ASCII folds to its lower case; `| 0x20` lower-cases a letter and makes no letter of anything else.
        if (at === FIELD_LENGTH) return undefined;
        const lower = codePoint | 0x20;
        siteid = siteid && SITEID.charCodeAt(at) === lower;
        apikey = apikey && APIKEY.charCodeAt(at) === lower;
        at++;
      } else {
        // A surrogate pair read half raw, half escaped is not where `written` says: look it up as a string.
        const letters = this.fieldLettersOf(codePoint, codePoint > 0xffff && i - written !== 2 ? -1 : written);
        if (letters === null) return undefined;
        if (letters === '') continue;
        siteid = siteid && SITEID.startsWith(letters, at);
        apikey = apikey && APIKEY.startsWith(letters, at);
        at += letters.length;
      }
      if (!siteid && !apikey) return undefined;
    }
    if (at !== FIELD_LENGTH) return undefined;
    return siteid ? 'siteid' : apikey ? 'apikey' : undefined;
  }
}

/** For one JSON text, the credential field that a member name from `start` to `end` (quotes included) folds to. */
export function credentialFieldReader(text: string): (start: number, end: number) => CredentialField | undefined {
  const reader = new NameReader(text);
  return (start, end) => reader.fieldOf(start, end);
}

/** Escapes decoded. */
export function isExactly(text: string, start: number, end: number, field: CredentialField): boolean {
  if (end - start === field.length + 2) return text.startsWith(field, start + 1);
  return JSON.parse(text.slice(start, end)) === field;
}
