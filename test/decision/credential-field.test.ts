import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { credentialFieldReader, folded, type CredentialField } from '../../src/decision/credential-field.js';

/** The field a name token folds to by definition: decode it, fold it whole, compare. */
function foldedField(token: string): CredentialField | undefined {
  const form = folded(JSON.parse(token) as string);
  return form === 'siteid' || form === 'apikey' ? form : undefined;
}

/** What the reader makes of a name token standing alone. */
function readField(token: string): CredentialField | undefined {
  return credentialFieldReader(token)(0, token.length);
}

/** Each UTF-16 unit of `text` as a JSON \uXXXX escape. */
function escaped(text: string): string {
  let written = '';
  for (let i = 0; i < text.length; i++) written += `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return written;
}

describe('credentialFieldReader', () => {
  const named: Array<[string, CredentialField | undefined]> = [
    ['"siteid"', 'siteid'],
    ['"apikey"', 'apikey'],
    ['"SiteID"', 'siteid'],
    ['"APIKEY"', 'apikey'],
    ['"s\\u0069teid"', 'siteid'],
    ['"\\u0053ITEID"', 'siteid'],
    ['"\u017fiteid"', 'siteid'],
    ['"\\u017fiteid"', 'siteid'],
    ['"api\u212aey"', 'apikey'],
    ['"s\u0130te\u0130d"', 'siteid'],
    ['"\uff53\uff49\uff54\uff45\uff49\uff44"', 'siteid'],
    ['"\uff21\uff30\uff29\uff2b\uff25\uff39"', 'apikey'],
    ['"s\u0301i\u0308teid"', 'siteid'],
    ['"siteid\uff9e"', 'siteid'],
    ['"\\ud834\\udd65siteid"', 'siteid'],
    ['"\ud834\\udd65siteid"', 'siteid'],
    ['"\\ud834\udd65siteid"', 'siteid'],
    ['"\ud835\udc2citeid"', 'siteid'],
    ['"\\ud835\\udc2citeid"', 'siteid'],
    ['"api\u2096ey"', 'apikey'],
    ['"\ufb06eid"', undefined],
    ['"\u1e9bit\u0113id"', 'siteid'],
    ['"sitei"', undefined],
    ['"siteidd"', undefined],
    ['"site id"', undefined],
    ['"site\\u0000id"', undefined],
    ['"siteid\\n"', undefined],
    ['"\\ud800siteid"', undefined],
    ['"siteid\udc00"', undefined],
    ['""', undefined],
    ['"\u0301"', undefined],
    ['"\u0441iteid"', undefined],
    ['"apikey\u200d"', undefined],
  ];
  for (const [token, field] of named) {
    it(`reads ${token} as ${field ?? 'no credential field'}, as folding it does`, () => {
      assert.equal(foldedField(token), field, 'the table itself is wrong');
      assert.equal(readField(token), field);
    });
  }

  it('agrees with folding the whole name for every code point, raw and escaped, in and around both fields', () => {
    let compared = 0;
    let fields = 0;
    /** `name` written with `character` raw (where JSON allows) and escaped, against folding `name`. */
    const compare = (name: string, character: string, forms: readonly string[]) => {
      const form = folded(name);
      const expected = form === 'siteid' || form === 'apikey' ? form : undefined;
      for (const written of forms) {
        const token = `"${name.replace(character, written)}"`;
        assert.equal(readField(token), expected, `for ${JSON.stringify(token)}`);
        compared++;
      }
      if (expected !== undefined) fields++;
    };
    for (let codePoint = 0; codePoint <= 0x10ffff; codePoint++) {
      // Lone surrogates included: JSON.parse accepts them raw and escaped.
      const character = String.fromCodePoint(codePoint);
      const forms = codePoint < 0x20 || codePoint === 0x22 || codePoint === 0x5c ? [escaped(character)] : [character, escaped(character)];
      // A character that vanishes makes siteid of s…iteid.
      compare(`s${character}iteid`, character, forms);
      // A character that folds to letters of a field can take their place in it.
      const letters = folded(character);
      if (letters === '' || !/^[a-z]+$/.test(letters)) continue;
      for (const field of ['siteid', 'apikey']) {
        const at = field.indexOf(letters);
        if (at >= 0) compare(`${field.slice(0, at)}${character}${field.slice(at + letters.length)}`, character, forms);
      }
    }
    assert.ok(compared > 2_000_000 && fields > 3_000, `compared ${compared} names, ${fields} of them fields`);
  });

  it('refuses a name of many non-ASCII letters without looking past the first that no field holds', () => {
    const text = `"${'ñ'.repeat(1 << 20)}"`;
    // Counted, not timed: the characters the reader looks at, through a String that counts its reads.
    let reads = 0;
    const counted = Object.assign(new String(text), {
      charCodeAt(index: number): number {
        reads++;
        return text.charCodeAt(index);
      },
    });
    assert.equal(credentialFieldReader(counted as unknown as string)(0, text.length), undefined);
    assert.ok(reads > 0 && reads < 16, `${reads} characters read of ${text.length}`);
  });
});
