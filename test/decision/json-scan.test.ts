import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scanJson, type JsonShape } from '../../src/decision/json-scan.js';

/** What JSON.parse makes of a text: the verdict the scanner must give for every input. */
function parsedShape(text: string): JsonShape {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'invalid';
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? 'object' : 'not-object';
}

interface ScannedMember {
  readonly name: string;
  readonly raw: string;
}

function scanned(text: string): { readonly shape: JsonShape; readonly members: ScannedMember[] } {
  const members: ScannedMember[] = [];
  const shape = scanJson(text, (nameStart, nameEnd, valueStart, valueEnd) => {
    members.push({ name: text.slice(nameStart, nameEnd), raw: text.slice(valueStart, valueEnd) });
  });
  return { shape, members };
}

function assertSameVerdict(text: string): void {
  assert.equal(scanned(text).shape, parsedShape(text), `verdict for ${JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text)}`);
}

/** The members reported for a valid object are its names, and each last one's value is what JSON.parse reads for it. */
function assertMembersAsParsed(text: string): void {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  const { members } = scanned(text);
  const names = new Set(members.map((m) => JSON.parse(m.name) as string));
  assert.deepEqual([...names].sort(), Object.keys(parsed).sort(), text);
  for (const member of members) {
    const name = JSON.parse(member.name) as string;
    // JSON.parse keeps the last of a repeated name.
    if (members.filter((m) => JSON.parse(m.name) === name).at(-1) === member) {
      assert.deepEqual(JSON.parse(member.raw), parsed[name], text);
    }
  }
}

/** Inputs chosen for the corners of RFC 8259 and of V8's JSON.parse. */
const TRICKY: readonly string[] = [
  // Empty and whitespace.
  '', ' ', '\t\n\r ', '\u00a0{}', '{}\u00a0', '\ufeff{}', '{}\ufeff', '\u2028{}', '\u000b{}', '\u000c{}', '{}\u0000', '\u0000',
  ' {} ', '\n{\n}\n', '\r\n{\r\n"a"\r\n:\r\n1\r\n}\r\n', '\t[\t1\t,\t2\t]\t',
  // Top-level values of every kind.
  '{}', '[]', '""', '0', '-0', '1', 'true', 'false', 'null', '"x"', '[{}]', '{"a":{}}',
  'True', 'NULL', 'nul', 'tru', 'fals', 'nulll', 'truefalse', 'undefined', 'NaN', 'Infinity', '-Infinity',
  // Numbers.
  '-', '+1', '01', '00', '-01', '0.', '.5', '0.5', '-0.0', '1e5', '1E5', '1e+5', '1e-5', '1e', '1e+', '1E-', '1.e5',
  '1.5e5', '-1.5E-05', '0e0', '1ee5', '1e5.5', '0x10', '1_000', '1,000', '1 2', '9'.repeat(400), `1e${'9'.repeat(400)}`,
  '-9223372036854775808', '1.7976931348623157e309', '[-]', '[01]', '[1.]', '[.1]', '[-0]', '{"a":-}', '{"a":01}', '{"a":1.}',
  '\u0661', '１', '[1e5]', '{"siteid":1001}', '{"siteid":1001.0}', '{"siteid":1e3}',
  // Strings and escapes.
  '"', '"\\"', '"\\\\"', '"\\/"', '"\\b\\f\\n\\r\\t"', '"\\a"', '"\\x41"', '"\\u0041"', '"\\u004"', '"\\u00G1"', '"\\U0041"',
  '"\\u00411"', '"\\ud800"', '"\\udc00"', '"\\ud83d\\ude00"', '"\\ude00\\ud83d"', '"\ud800"', '"\udc00"', '"\ud83d\ude00"',
  '"\u0000"', '"\u001f"', '"\u0020"', '"\u007f"', '"\t"', '"\n"', '"\r"', '"\u2028\u2029"', '"\\u0000"', '"\\', '"\\u',
  '"\\"\\"', "'a'", '{"a":"b\\"}', '{"a\\"":1}', '{"\\u0000":1}', '{"":1}', '{"a":""}',
  // Objects.
  '{', '}', '{,}', '{"a"}', '{"a":}', '{"a" 1}', '{"a"::1}', '{"a":1,}', '{"a":1,,"b":2}', '{,"a":1}', '{"a":1 "b":2}',
  '{a:1}', "{'a':1}", '{"a":1}}', '{{}}', '{"a":1]', '{1:1}', '{null:1}', '{"a":1,"a":2}', '{ "a" : 1 , "b" : [ ] }',
  '{"a":[1,{"b":[2,{"c":3}]}],"d":{"e":{"f":null}}}', '{"__proto__":1}', '{"a":1}{"b":2}', '{"a":1} x', '{"a":1}\n',
  // Arrays.
  '[', ']', '[,]', '[1,]', '[,1]', '[1,,2]', '[1 2]', '[1],', '[1]]', '[[]', '[]]', '[}', '{]', '[[[]]]', '[[[]]', '[]][',
  '["a",{"b":[]},null,true,false,-1.5e3]',
];

describe('scanJson gives the verdict JSON.parse gives', () => {
  it('on inputs chosen for the corners of the grammar', () => {
    for (const text of TRICKY) assertSameVerdict(text);
  });

  it('on every text of up to three characters from the characters that matter', () => {
    const alphabet = [...'{}[],:"\\01-.eE+tfnulrasx \t\n\r', '\u0000', '\u001f', '\u00a0', '\ufeff', '\ud800', 'é'];
    const texts = [''];
    for (let length = 1; length <= 3; length++) {
      for (const prefix of texts.filter((t) => t.length === length - 1)) {
        for (const c of alphabet) texts.push(prefix + c);
      }
    }
    assert.ok(texts.length > 30_000);
    for (const text of texts) assertSameVerdict(text);
  });

  it('on thousands of mutations of valid documents', () => {
    // A fixed seed: the same inputs on every run, so a failure can be reproduced.
    let seed = 0x2f6b_a9c1;
    const random = (below: number): number => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return (seed >>> 8) % below;
    };
    const documents = [
      '{"siteid":1001,"apikey":"3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b","order":{"items":[1,2.5,-3e2],"note":"a\\"b\\u00e9"}}',
      '[{"a":[true,false,null]},{"b":{"c":"\\ud83d\\ude00"}},-0.0,1E+2]',
      ' { "x" : [ [ ] , { } , "" , 0 ] } ',
    ];
    const pieces = [...'{}[],:"\\0123456789-+.eEtrufalsn \t\n\r', '\\u', '\\u00', 'true', 'null', '\u0000', '\ufeff', '\ud800'];
    let valid = 0;
    for (let round = 0; round < 20_000; round++) {
      let text = documents[random(documents.length)] ?? '';
      for (let edits = 1 + random(3); edits > 0; edits--) {
        const at = random(text.length + 1);
        const piece = pieces[random(pieces.length)] ?? '';
        const edit = random(3);
        if (edit === 0) text = text.slice(0, at) + text.slice(at + 1);
        else if (edit === 1) text = text.slice(0, at) + piece + text.slice(at);
        else text = text.slice(0, at) + piece + text.slice(at + 1);
      }
      if (parsedShape(text) !== 'invalid') valid++;
      assertSameVerdict(text);
    }
    assert.ok(valid > 500, `only ${valid} of the mutations were valid JSON: too few to compare the valid side`);
  });

  it('on long strings, with what ends or breaks a string before, at and after the length where the scanner skips ahead', () => {
    const breakers = ['"', '\\"', '\\\\', '\\u00e9', '\\u00G9', '\\x', '\\', '\u0000', '\u001f', '\n', '\u007f', '\ud800', '\udc00', 'é', '\u2028'];
    let valid = 0;
    for (const length of [1, 63, 64, 65, 66, 127, 128, 129, 1_000]) {
      for (const breaker of breakers) {
        for (const at of [0, 1, 62, 63, 64, 65, 66, length - 1, length]) {
          if (at < 0 || at > length) continue;
          const inner = `${'x'.repeat(at)}${breaker}${'y'.repeat(length - at)}`;
          for (const text of [`"${inner}"`, `{"siteid":1001,"note":"${inner}","apikey":"k"}`, `{"${inner}":1,"siteid":2}`, `["${inner}`, `{"note":"${inner}`]) {
            if (parsedShape(text) !== 'invalid') valid++;
            assertSameVerdict(text);
            if (parsedShape(text) === 'object') assertMembersAsParsed(text);
          }
        }
      }
    }
    // After an escape the scanner reads on one character at a time until the next long stretch.
    for (const breaker of breakers) {
      for (const gap of [0, 1, 63, 64, 65, 200]) {
        const inner = `${'x'.repeat(100)}\\n${'y'.repeat(gap)}\\u00e9${'z'.repeat(gap)}${breaker}${'w'.repeat(70)}`;
        for (const text of [`"${inner}"`, `{"note":"${inner}","siteid":1}`]) {
          if (parsedShape(text) !== 'invalid') valid++;
          assertSameVerdict(text);
          if (parsedShape(text) === 'object') assertMembersAsParsed(text);
        }
      }
    }
    assert.ok(valid > 300, `only ${valid} of the long-string texts were valid JSON`);
  });

  it('on nesting a million deep, closed or not, without overflowing the stack', () => {
    const depth = 1_000_000;
    for (const text of [
      `${'['.repeat(depth)}${']'.repeat(depth)}`,
      '['.repeat(depth),
      `${'['.repeat(depth)}${']'.repeat(depth - 1)}`,
      `${'['.repeat(depth)}${']'.repeat(depth + 1)}`,
      `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
      `${'{"a":['.repeat(depth / 2)}${']}'.repeat(depth / 2)}`,
      `${'{"a":['.repeat(depth / 2)}${'}]'.repeat(depth / 2)}`,
    ]) {
      assertSameVerdict(text);
    }
  });
});

describe('scanJson reports the members of a top-level object', () => {
  it('each name and value as written, in order, duplicates included', () => {
    const text = ' { "siteid" : 1001 , "s\\u0069teid":"1002","nested":{"siteid":9,"list":[{"apikey":1}]},"siteid":-1.5e3,"n":null } ';
    assert.deepEqual(scanned(text), {
      shape: 'object',
      members: [
        { name: '"siteid"', raw: '1001' },
        { name: '"s\\u0069teid"', raw: '"1002"' },
        { name: '"nested"', raw: '{"siteid":9,"list":[{"apikey":1}]}' },
        { name: '"siteid"', raw: '-1.5e3' },
        { name: '"n"', raw: 'null' },
      ],
    });
  });

  it('none for a top-level array or scalar', () => {
    assert.deepEqual(scanned('[{"siteid":1001}]').members, []);
    assert.deepEqual(scanned('"siteid"').members, []);
  });

  it('whose values are what JSON.parse reads for those names', () => {
    for (const text of TRICKY.filter((t) => parsedShape(t) === 'object')) assertMembersAsParsed(text);
  });
});
