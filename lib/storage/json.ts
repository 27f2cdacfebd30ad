/** A JSON object of storage. Bundles for Workers. */
import type { StorageDriver } from "./types.js";

/** The object at `key` parsed as JSON, with its etag; null when there is none or it is not JSON. */
export async function readJson<T>(driver: StorageDriver, key: string): Promise<{ value: T; etag: string } | null> {
  const got = await driver.get(key);
  if (!got) return null;
  const text = await new Response(got.body).text();
  try {
    return { value: JSON.parse(text) as T, etag: got.etag };
  } catch {
    return null;
  }
}
