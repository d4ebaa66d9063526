/**
 * A change or a report refused as asked, rendered by each transport its own way: the CLI names the field's
 * `--flag`, the API the JSON field, the console puts the message beside the input. The message names no flag.
 */
export class Refusal extends Error {
  override readonly name = 'Refusal';
  /** Stable for clients, e.g. DATE_IN_PAST, SITE_ID_INVALID. */
  readonly code: string;
  /** The body field or query parameter it concerns (`expires`, `entries`, `siteId`). */
  readonly field: string | undefined;
  /** What is wrong with the value, without the field's name: the CLI puts its flag before it. */
  readonly problem: string;
  readonly example: string | undefined;
  /** The field that says "yes, I mean it", when the value is refused only until the person confirms it. */
  readonly confirmedBy: string | undefined;

  constructor(refused: { code: string; field?: string; label?: string; problem: string; example?: string; confirmedBy?: string }) {
    const example = refused.example === undefined ? '' : `, e.g. ${refused.example}`;
    super(`${refused.label === undefined ? '' : subjectOf(refused.label, refused.problem)}${refused.problem}${example}`);
    this.code = refused.code;
    this.field = refused.field;
    this.problem = refused.problem;
    this.example = refused.example;
    this.confirmedBy = refused.confirmedBy;
  }
}

/** "the name is 201 characters long", but "the site id: "x" is not a site id". */
export function subjectOf(name: string, problem: string): string {
  return /^(is|are|must|has|have)\b/.test(problem) ? `${name} ` : `${name}: `;
}
