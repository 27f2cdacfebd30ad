/** Whether a parsed JSON value is an object (not null, not an array): the one test of it, for every reader of untrusted JSON. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
