/**
 * A run's claim, carried by the runner's first request to the API when it can be (lib/sync/types.ts
 * ClaimRider): the conditional manifest (POST /v1/sync/manifest with `claim`) answers the claim
 * beside the workspace's listing, one request where there were two. Where nothing carries it (a
 * client without manifestWithClaim, the plain manifest, a run that fails before it asks), or the
 * request that carried it failed or was answered by an older API that took no claim, it goes alone
 * (POST /v1/sync/run/claim), as before.
 *
 * Exactly once still: the claim is the same create-only write of the run's claim object, wherever it
 * is asked. Each attempt (one try of one invocation: run-once.ts execute) has a random `attempt` id,
 * so the claim sent alone after a carrying request whose answer was lost finds its own claim and is
 * told `claimed`; a retried invocation is another attempt and finds the claim taken.
 */
import { randomUUID } from "node:crypto";
import type { ClaimOutcome, ClaimRequest, ClaimRider, RunRecordClient } from "../../lib/sync/types.js";

export class RidingClaim implements ClaimRider {
  private readonly request: ClaimRequest;
  /** waiting: not asked yet; asked: carried or sent alone (answered once). */
  private asked = false;
  private settled = false;
  private resolve!: (o: ClaimOutcome) => void;
  private reject!: (e: unknown) => void;
  /** The claim's outcome, however it was asked. */
  readonly outcome: Promise<ClaimOutcome>;

  constructor(private readonly records: RunRecordClient, task: boolean) {
    this.request = { task, attempt: randomUUID() };
    this.outcome = new Promise<ClaimOutcome>((res, rej) => ((this.resolve = res), (this.reject = rej)));
    this.outcome.catch(() => {}); // handled where it is awaited
  }

  carry(): ClaimRequest | null {
    if (this.asked) return null;
    this.asked = true;
    return this.request;
  }

  answered(outcome: ClaimOutcome | null): void {
    if (this.settled) return;
    if (outcome) {
      this.settled = true;
      this.resolve(outcome);
      return;
    }
    this.send();
  }

  alone(): void {
    if (this.asked) return;
    this.asked = true;
    this.send();
  }

  private send(): void {
    this.settled = true;
    this.records.claim(this.request).then(this.resolve, this.reject);
  }
}
