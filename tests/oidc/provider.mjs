// A real, certified OpenID provider (the npm package oidc-provider) for connwatch's tests.
// Usage: node provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI
// Accounts: any login name; its claims come from ACCOUNTS below (unknown names get no
// groups). The provider's own development login and consent pages are used as they are.
import Provider from "oidc-provider";

const [port, clientId, clientSecret, redirectUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const ACCOUNTS = {
  "dba.dora": { name: "Dora DBA", groups: ["dba"] },
  "lead.lena": { name: "Lena Lead", groups: ["dba", "dba-leads"] },
  "mgr.max": { name: "Max Manager", groups: ["managers"] },
  "intruder": { name: "Not Allowed", groups: ["dba-leads"] },
};

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      response_types: ["code"],
      grant_types: ["authorization_code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  pkce: { required: () => true },
  scopes: ["openid", "profile", "email", "groups"],
  claims: {
    openid: ["sub"],
    profile: ["name", "preferred_username"],
    email: ["email", "email_verified"],
    groups: ["groups"],
  },
  cookies: { keys: ["connwatch-test-cookie-key"] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const known = ACCOUNTS[id] || { name: id, groups: [] };
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          name: known.name,
          preferred_username: id,
          email: `${id}@example.test`,
          email_verified: true,
          groups: known.groups,
        };
      },
    };
  },
});

provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`oidc-provider listening ${issuer}`);
});
