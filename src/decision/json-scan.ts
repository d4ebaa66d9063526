/** What JSON.parse would make of a text. */
export type JsonShape = 'invalid' | 'object' | 'not-object';

/** Positions of a top-level member's name, quotes included, and of its value as written. */
type TopLevelMemberVisitor = (nameStart: number, nameEnd: number, valueStart: number, valueEnd: number) => void;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

// Open containers are kept one bit each (set: an object): in a number for the first 32 levels,
// all that ordinary bodies use, then in an array that grows with the depth.
const SHALLOW_LEVELS = 32;

/** RFC 8259 §2: the only insignificant whitespace. No BOM, no other Unicode space. */
function skipWhitespace(text: string, at: number): number {
  let i = at;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
  return i;
}

/** -1 past the end: reading past it would deoptimise the caller. */
function codeAt(text: string, at: number): number {
  return at < text.length ? text.charCodeAt(at) : -1;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function isHexDigit(c: number): boolean {
  return (c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** The regex engine outruns a charCodeAt loop, but a call costs tens of characters: used past that many plain. */
const PLAIN_STRETCH = /[^"\\\u0000-\u001f]*/y;
const PLAIN_STRETCH_AFTER = 64;

function endOfPlainStretch(text: string, at: number): number {
  PLAIN_STRETCH.lastIndex = at;
  PLAIN_STRETCH.test(text);
  return PLAIN_STRETCH.lastIndex;
}

/** RFC 8259 §7. `at` is the opening quote; the index after the closing one, or -1. */
function endOfString(text: string, at: number): number {
  let i = at + 1;
  let skipFrom = i + PLAIN_STRETCH_AFTER;
  for (;;) {
    if (i >= skipFrom) i = endOfPlainStretch(text, i);
    const c = codeAt(text, i);
    if (c === QUOTE) return i + 1;
    // A control character, or the end of the text.
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      const escaped = codeAt(text, i + 1);
      if (escaped === 0x75 /* u */) {
        if (!(isHexDigit(codeAt(text, i + 2)) && isHexDigit(codeAt(text, i + 3)) && isHexDigit(codeAt(text, i + 4)) && isHexDigit(codeAt(text, i + 5)))) {
          return -1;
        }
        i += 6;
        skipFrom = i + PLAIN_STRETCH_AFTER;
        continue;
      }
      // " \ / b f n r t
      if (escaped !== QUOTE && escaped !== BACKSLASH && escaped !== 0x2f && escaped !== 0x62 && escaped !== 0x66 && escaped !== 0x6e && escaped !== 0x72 && escaped !== 0x74) {
        return -1;
      }
      i += 2;
      skipFrom = i + PLAIN_STRETCH_AFTER;
      continue;
    }
    i++;
  }
}

function endOfDigits(text: string, at: number): number {
  let i = at;
  while (isDigit(codeAt(text, i))) i++;
  return i;
}

/** RFC 8259 §6: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; the index after it, or -1. */
function endOfNumber(text: string, at: number): number {
  let i = at;
  if (codeAt(text, i) === MINUS) i++;
  const first = codeAt(text, i);
  if (first === ZERO) i++;
  else if (isDigit(first)) i = endOfDigits(text, i + 1);
  else return -1;
  if (codeAt(text, i) === DOT) {
    const fractionEnd = endOfDigits(text, i + 1);
    if (fractionEnd === i + 1) return -1;
    i = fractionEnd;
  }
  const e = codeAt(text, i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = codeAt(text, i);
    if (sign === PLUS || sign === MINUS) i++;
    const exponentEnd = endOfDigits(text, i);
    if (exponentEnd === i) return -1;
    i = exponentEnd;
  }
  return i;
}

function endOfLiteral(text: string, at: number, literal: string): number {
  return text.startsWith(literal, at) ? at + literal.length : -1;
}

/**
 * JSON.parse's verdict without building a value, reporting every top-level member, duplicates included (JSON.parse
 * keeps the last of a repeated name, others the first). Iterative: no nesting overflows the stack.
 */
export function scanJson(text: string, onTopLevelMember: TopLevelMemberVisitor): JsonShape {
  let shallow = 0;
  let deeper: Uint8Array | undefined;
  let depth = 0;
  let i = skipWhitespace(text, 0);
  const topLevelObject = codeAt(text, i) === OPEN_OBJECT;
  let nameStart = 0;
  let nameEnd = 0;
  let memberValueStart = 0;
  let expectName = false;
  // Each turn reads a member name if one is due, then one value at i, then the punctuation after
  // it up to where the next value or name starts.
  for (;;) {
    if (expectName) {
      if (codeAt(text, i) !== QUOTE) return 'invalid';
      const end = endOfString(text, i);
      if (end < 0) return 'invalid';
      const colon = skipWhitespace(text, end);
      if (codeAt(text, colon) !== COLON) return 'invalid';
      const valueStart = skipWhitespace(text, colon + 1);
      if (depth === 1) {
        nameStart = i;
        nameEnd = end;
        memberValueStart = valueStart;
      }
      i = valueStart;
    }

    let valueEnd: number;
    const c = codeAt(text, i);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth < SHALLOW_LEVELS) {
        shallow = c === OPEN_OBJECT ? shallow | (1 << depth) : shallow & ~(1 << depth);
      } else {
        if (deeper === undefined || depth - SHALLOW_LEVELS === deeper.length) {
          const grown = new Uint8Array(Math.max(64, (deeper?.length ?? 0) * 2));
          if (deeper !== undefined) grown.set(deeper);
          deeper = grown;
        }
        deeper[depth - SHALLOW_LEVELS] = c === OPEN_OBJECT ? 1 : 0;
      }
      depth++;
      i = skipWhitespace(text, i + 1);
      if (codeAt(text, i) !== (c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        expectName = c === OPEN_OBJECT;
        continue;
      }
      depth--;
      valueEnd = i + 1;
    } else if (c === QUOTE) {
      valueEnd = endOfString(text, i);
    } else if (c === MINUS || isDigit(c)) {
      valueEnd = endOfNumber(text, i);
    } else if (c === 0x74) {
      valueEnd = endOfLiteral(text, i, 'true');
    } else if (c === 0x66) {
      valueEnd = endOfLiteral(text, i, 'false');
    } else if (c === 0x6e) {
      valueEnd = endOfLiteral(text, i, 'null');
    } else {
      return 'invalid';
    }
    if (valueEnd < 0) return 'invalid';

    // A value ended at valueEnd: report it if it was a top-level member's, and close every
    // container that ends right after it.
    for (;;) {
      if (depth === 1 && topLevelObject) onTopLevelMember(nameStart, nameEnd, memberValueStart, valueEnd);
      i = skipWhitespace(text, valueEnd);
      if (depth === 0) return i === text.length ? (topLevelObject ? 'object' : 'not-object') : 'invalid';
      const next = codeAt(text, i);
      const level = depth - 1;
      const inObject = level < SHALLOW_LEVELS ? ((shallow >>> level) & 1) === 1 : deeper?.[level - SHALLOW_LEVELS] === 1;
      if (next === COMMA) {
        i = skipWhitespace(text, i + 1);
        expectName = inObject;
        break;
      }
      if (next === (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        depth--;
        valueEnd = i + 1;
        continue;
      }
      return 'invalid';
    }
  }
}
