/** Each part in a column of its own: none can pose as another (an e-mail "alice@corp (sub 1)" is no subject). */
export type AuditActor =
  /** A person on the admin port: the admin token's `sub`, and its e-mail only when the provider verified it. */
  | { readonly kind: 'admin-token'; readonly subject: string; readonly email?: string }
  /** The CLI: the name `--actor` or SITEKEY_ACTOR gives, else the OS user; nobody vouches for it. */
  | { readonly kind: 'cli'; readonly subject: string };

export type ActorKind = AuditActor['kind'];

/** Entries written before the parts were kept apart have only `actor`, their one text, and null parts. */
export interface RecordedActor {
  readonly actor: string;
  readonly actorKind: ActorKind | null;
  readonly actorSubject: string | null;
  readonly actorEmail: string | null;
}

/** What the `actor` column held before the parts. */
export function actorText(actor: AuditActor): string {
  if (actor.kind === 'cli') return actor.subject;
  return actor.email === undefined ? `sub ${actor.subject}` : `${actor.email} (sub ${actor.subject})`;
}

/** In the order of actorValues. */
export const ACTOR_COLUMNS = 'actor, actor_kind, actor_subject, actor_email';

export function actorValues(actor: AuditActor): [string, ActorKind, string, string | null] {
  return [actorText(actor), actor.kind, actor.subject, actor.kind === 'admin-token' ? (actor.email ?? null) : null];
}

export const recordedActorColumns = (alias: string): string =>
  `${alias}.actor, ${alias}.actor_kind, ${alias}.actor_subject, ${alias}.actor_email`;

export interface RecordedActorRow {
  readonly actor: string;
  readonly actor_kind: string | null;
  readonly actor_subject: string | null;
  readonly actor_email: string | null;
}

export function recordedActor(row: RecordedActorRow): RecordedActor {
  const kind = row.actor_kind === 'admin-token' || row.actor_kind === 'cli' ? row.actor_kind : null;
  return {
    actor: row.actor,
    actorKind: kind,
    actorSubject: kind === null ? null : row.actor_subject,
    actorEmail: kind === 'admin-token' ? row.actor_email : null,
  };
}

