/** The fields people fill in, in their words; a refusal names its field by these. */
const LABELS: Readonly<Record<string, string>> = {
  id: 'the site id', siteId: 'the site id', site: 'the site id', sites: 'the site ids',
  name: 'the name', note: 'the note', actor: 'who makes the change', method: 'the method', action: 'the action',
  keyId: 'the key id', key: 'the key', expires: 'the expiry date', oldExpires: "the old key's last day",
  entries: 'the addresses', entry: 'the address',
  until: 'the end date', from: 'the start', at: 'the sunset date', guide: 'the migration guide',
  brownoutId: 'the brownout id', clientId: 'the client id', client: 'the client id',
  jwks: "the partner's key set", jwksUri: "the URL of the partner's key set",
  since: 'how far back', limit: 'how many rows',
};

/** Rendered by each transport its own way: the CLI names the field's `--flag`, the API the JSON field. */
export class Refusal extends Error {
  override readonly name = 'Refusal';

  /**
   * `problem`: what is wrong with the value, without the field's name (the CLI puts its flag before it);
   * `confirmedBy`: the field that says "yes, I mean it", when the value is refused only until the person confirms it.
   */
  constructor(
    readonly code: string,
    readonly field: string | undefined,
    readonly problem: string,
    readonly example?: string,
    readonly confirmedBy?: string,
  ) {
    const subject = field === undefined ? '' : subjectOf(LABELS[field] ?? field, problem);
    super(`${subject}${problem}${example === undefined ? '' : `, e.g. ${example}`}`);
  }
}

/** "the name is 201 characters long", but "the site id: "x" is not a site id". */
export function subjectOf(name: string, problem: string): string {
  return /^(is|are|must|has|have)\b/.test(problem) ? `${name} ` : `${name}: `;
}
