/**
 * The tenant's secrets as the egress proxy uses them (docs/secrets.md): which headers a host gets
 * (per header, the most specific destination; lib/shared/host-pattern.ts), which secret names a
 * host has (for the hint on a CONNECT), and redaction of every value from the lines the proxy
 * writes to the command's stderr. The values live only in the runner's process, never in the sandbox.
 */
import type { EgressSecret } from "../../lib/exec/types.js";
import { hostMatches, patternRank } from "../../lib/shared/host-pattern.js";

export interface SecretsForHost {
  /** The headers a request to `host` gets, lower-cased names; null when no secret names the host. */
  headersFor(host: string): Record<string, string> | null;
  namesFor(host: string): string[];
  redact(text: string): string;
}

export function secretsFor(secrets: EgressSecret[]): SecretsForHost {
  const matching = (host: string) => secrets.filter((s) => hostMatches(s.host, host));
  return {
    headersFor(host) {
      const chosen = new Map<string, EgressSecret>();
      for (const s of matching(host)) {
        const had = chosen.get(s.header.toLowerCase());
        if (!had || patternRank(s.host) > patternRank(had.host)) chosen.set(s.header.toLowerCase(), s);
      }
      return chosen.size ? Object.fromEntries([...chosen].map(([k, s]) => [k, s.value])) : null;
    },
    namesFor: (host) => [...new Set(matching(host).map((s) => s.name))],
    redact(text) {
      let out = text;
      for (const s of secrets) out = out.split(s.value).join(`{{secret:${s.name}}}`);
      return out;
    },
  };
}
