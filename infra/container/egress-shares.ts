/**
 * A live sandbox's network bytes, in shares: its egress proxy lives as long as the sandbox
 * (sandbox.ts), so each command takes what the proxy's upstream connections carried since the
 * last one took (its background processes' traffic since then included), and the sandbox's end
 * takes the rest. Every byte is in one share: the call's net_bytes_in / net_bytes_out, or the
 * "live sandbox" usage record's (docs/usage.md). Node only.
 */
import type { EgressBytes } from "./egress-proxy.js";

export class EgressShares {
  private carried: (() => EgressBytes) | null = null;
  private taken: EgressBytes = { bytesIn: 0, bytesOut: 0 };

  /** The proxy's count so far (SandboxSpec.onEgress): from then on the sandbox has network. */
  attach(carried: () => EgressBytes): void {
    this.carried = carried;
  }

  /** What was carried since the last take; undefined when the sandbox has no network. */
  take(): EgressBytes | undefined {
    if (!this.carried) return undefined;
    const now = this.carried();
    const share = { bytesIn: Math.max(0, now.bytesIn - this.taken.bytesIn), bytesOut: Math.max(0, now.bytesOut - this.taken.bytesOut) };
    this.taken = { bytesIn: Math.max(now.bytesIn, this.taken.bytesIn), bytesOut: Math.max(now.bytesOut, this.taken.bytesOut) };
    return share;
  }
}
