/** The Workers usage store: the conformance suite through the real Durable Object (SQLite) in workerd, and an object made before a sum was added. */
import { env } from "cloudflare:workers";
import { durableUsageStore, type UsageObjects } from "../../../../lib/run/metering/durable-store.js";
import { describeUsageStore } from "./store-conformance.js";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { SqlUsageLedger } from "../../../../lib/run/metering/sql-ledger.js";
import { HOUR_MS } from "../../../../lib/run/metering/store.js";

describeUsageStore("Durable Object per tenant", () => durableUsageStore(env.USAGE as unknown as UsageObjects));

it("an object whose hourly table predates the network sums gets their columns, its rows kept, and sums them from then on", async () => {
  const stub = env.USAGE.get(env.USAGE.idFromName(`old-${Date.now()}`));
  await runInDurableObject(stub, (_object, state: DurableObjectState) => {
    const sql = state.storage.sql;
    // The table as the first objects made it (before net_bytes_in / net_bytes_out), with one hour's row.
    sql.exec("DROP TABLE IF EXISTS hourly");
    sql.exec(`CREATE TABLE hourly (hour INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, workspace TEXT NOT NULL, key TEXT NOT NULL,
      calls INTEGER NOT NULL, ok INTEGER NOT NULL, errors INTEGER NOT NULL, ms INTEGER NOT NULL, bytes_read INTEGER NOT NULL, bytes_written INTEGER NOT NULL, sandbox_ms INTEGER NOT NULL,
      PRIMARY KEY (hour, kind, name, workspace, key)) WITHOUT ROWID`);
    const hour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
    sql.exec("INSERT INTO hourly VALUES (?, 'tool', 'web_fetch', 'w', 'k', 2, 2, 0, 10, 0, 0, 0)", hour);
    const ledger = new SqlUsageLedger(sql);
    ledger.record([{ tenant: "t", workspace: "w", key: "k", tool: "web_fetch", ok: true, ms: 5, bytes_read: 0, bytes_written: 0, net_bytes_in: 4_000, net_bytes_out: 250, at: hour + 1 }]);
    const [row] = ledger.query({ from: hour, to: hour + HOUR_MS, groupBy: ["tool"] });
    expect(row).toMatchObject({ tool: "web_fetch", calls: 3, ms: 15, net_bytes_in: 4_000, net_bytes_out: 250 });
    // A second start finds the columns there and adds none.
    new SqlUsageLedger(sql);
    expect(sql.exec("SELECT name FROM pragma_table_info('hourly')").toArray().filter((c) => String(c.name).startsWith("net_")).length).toBe(2);
  });
});
