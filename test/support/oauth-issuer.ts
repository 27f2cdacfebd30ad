/**
 * A tiny OAuth authorization server on 127.0.0.1 for the resource-server tests (docs/oauth.md):
 * RFC 8414 metadata, OpenID discovery and a JWKS over real HTTP, and access tokens signed with jose.
 * It issues no tokens over HTTP (the tests sign them directly): what we test is the resource side.
 * `rotate()` replaces the signing key (the old one leaves the JWKS); `fetches` counts JWKS reads;
 * `<issuer>/redirect?to=<url>` answers 302 to any URL (a key set that moved somewhere the guard refuses).
 * Node-only (node:http).
 */
import { createServer, type Server } from "node:http";
import { exportJWK, generateKeyPair, SignJWT, type JWK, type CryptoKey } from "jose";

export interface SigningKey {
  kid: string;
  alg: "RS256" | "ES256";
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export interface LocalIssuer {
  /** The issuer identifier (http://127.0.0.1:<port>/<path>). */
  issuer: string;
  jwksUri: string;
  /** The key tokens are signed with now. */
  current: SigningKey;
  /** JWKS reads so far. */
  fetches: number;
  /** Requests of any kind so far. */
  requests: number;
  /** A new signing key; the JWKS then holds only it. */
  rotate(): Promise<SigningKey>;
  /** An access token; claims override the defaults (iss, sub, aud, scope, iat, exp in 5 min). */
  token(claims?: Record<string, unknown>, opts?: { key?: SigningKey; kid?: string }): Promise<string>;
  close(): Promise<void>;
}

let kids = 0;
export async function newSigningKey(alg: "RS256" | "ES256" = "RS256"): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `k${++kids}-${alg.toLowerCase()}`;
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

export async function signToken(key: SigningKey, claims: Record<string, unknown>, kid = key.kid): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid, typ: "at+jwt" }).sign(key.privateKey);
}

/** Starts the issuer; `path`: the issuer's path ("" for the bare origin). `audience`: the default `aud` of its tokens. */
export async function startLocalIssuer(opts: { path?: string; audience?: string; alg?: "RS256" | "ES256" } = {}): Promise<LocalIssuer> {
  let current = await newSigningKey(opts.alg);
  let issuer = "";
  let jwksUri = "";
  const state = { fetches: 0, requests: 0 };
  const server: Server = createServer((req, res) => {
    state.requests++;
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const send = (doc: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(doc));
    };
    const meta = { issuer, jwks_uri: jwksUri, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, response_types_supported: ["code"] };
    const p = url.pathname;
    const issuerPath = new URL(issuer).pathname.replace(/\/$/, "");
    if (p === `/.well-known/oauth-authorization-server${issuerPath}`) return send(meta);
    if (p === `${issuerPath}/.well-known/openid-configuration`) return send(meta);
    if (p === `${issuerPath}/redirect`) {
      res.writeHead(302, { location: url.searchParams.get("to") ?? "/" });
      return res.end();
    }
    if (p === `${issuerPath}/jwks.json`) {
      state.fetches++;
      return send({ keys: [current.publicJwk] });
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  issuer = `http://127.0.0.1:${port}${opts.path ?? ""}`;
  jwksUri = `${issuer.replace(/\/$/, "")}/jwks.json`;
  const self: LocalIssuer = {
    issuer,
    jwksUri,
    get current() {
      return current;
    },
    get fetches() {
      return state.fetches;
    },
    get requests() {
      return state.requests;
    },
    async rotate() {
      current = await newSigningKey(opts.alg);
      return current;
    },
    async token(claims = {}, o = {}) {
      const now = Math.floor(Date.now() / 1000);
      return signToken(o.key ?? current, { iss: issuer, sub: "user-1", ...(opts.audience ? { aud: opts.audience } : {}), scope: "read write execute", iat: now, exp: now + 300, ...claims }, o.kid);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return self;
}
