// The container image carries no PostgreSQL server: sitekey-authz only loads this module when
// DATABASE_URL is unset, to start an embedded database for development. Say what to do instead.
throw new Error(
  'DATABASE_URL is unset, and this image has no embedded PostgreSQL (that is for development with make run): ' +
    'set DATABASE_URL to postgres://user:password@host:5432/database, in Kubernetes from a Secret (README, Deployment)',
);
