"""Who may do what: users and roles, Argon2id passwords, sessions, API tokens, login
throttling, single sign-on (OIDC, auth proxy) and the audit log. The web calls it; it
never imports the web."""
