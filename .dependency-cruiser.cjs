/**
 * The layer rules of the tree (docs/architecture.md draws them). `npm test` runs them
 * (test/architecture.node.test.ts); `npx depcruise lib functions infra` prints every violation.
 *
 * A call walks down: entries → HTTP API → other doors → the run path → tools → the tool contract →
 * executors → the sync protocol → the workspace → layers · search · archive → the storage layout → storage → shared helpers.
 * A layer imports only itself and the layers below it, type imports included, and nothing imports in a cycle.
 */
const LAYERS = [
  { name: "entries", path: "^(infra/(cloudflare|lambda)\\.ts|lib/runtime/)", why: "runtime entries and env wiring: they assemble the app" },
  { name: "api", path: "^lib/api/", why: "the HTTP API: app, routes, access, auth, docs; AppDeps is assembled here" },
  { name: "doors", path: "^lib/doors/", why: "MCP, provider formats, SSE, compat: thin adapters over the run path" },
  { name: "run", path: "^lib/run/", why: "the one run path every door takes: toolset, approval gate, undo journal, metering" },
  { name: "tools", path: "^(functions/|lib/tools/)", why: "one tool per file and the libraries only tools use" },
  { name: "contract", path: "^lib/contract/", why: "the contract tools are built with: definition, arguments, output, cut, progress" },
  { name: "exec", path: "^lib/exec/", why: "executors and runs of bash/run_code" },
  { name: "sync", path: "^lib/sync/", why: "the runner's sync protocol, API side" },
  { name: "workspace", path: "^lib/workspace/", why: "a tenant's files: paths, session records, reads, writes, edits, transfers" },
  { name: "stores", path: "^lib/(layers|search|archive)/", why: "below the workspace: layers (packs, manifests), search (index, grep), archive (tar/zip)" },
  { name: "layout", path: "^lib/layout/", why: "a workspace in storage: canonical paths, every key, key order, file types, the modes and links table; the workspace, the stores and the runner share it" },
  { name: "limits", path: "^lib/limits/", why: "tenants' limits and counters: calls per minute, concurrent runs, quotas (a Durable Object per tenant, or memory)" },
  { name: "storage", path: "^lib/storage/", why: "storage drivers and KV: keys in, bytes out; no tenant" },
  { name: "shared", path: "^lib/shared/", why: "helpers with no knowledge of the product: errors, hashes, text, caches" },
];

const upward = LAYERS.flatMap((low, i) =>
  i === 0 ? [] : [{
    name: `no-upward-from-${low.name}`,
    severity: "error",
    comment: `${low.name} (${low.why}) may not import a layer above it: ${LAYERS.slice(0, i).map((l) => l.name).join(", ")}. Declare the narrow dependency in ${low.name}'s own folder and let the caller pass it in.`,
    from: { path: low.path },
    to: { path: LAYERS.slice(0, i).map((l) => `(${l.path})`).join("|") },
  }],
);

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import cycle ties layers together so none can be read, tested or moved alone. Type imports count: move the shared type down to the lower of the two.",
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: "runner-is-not-the-api",
      severity: "error",
      comment: "infra/container is the runner (the container function): it speaks the sync protocol and may share helpers, but never the API's app, doors, run path, tools or workspace.",
      from: { path: "^infra/container/" },
      to: { path: "^(lib/(api|doors|run|runtime|workspace|layers|tools)/|functions/)" },
    },
    {
      name: "client-stands-alone",
      severity: "error",
      comment: "lib/client is the typed client package: it bundles alone and may use only the shared error registry.",
      from: { path: "^lib/client/" },
      to: { path: "^(lib/(?!client/|shared/errors)|functions/|infra/)" },
    },
    {
      name: "lib-is-not-an-entry",
      severity: "error",
      comment: "lib/ never imports the entries (infra/*.ts) or the tools (functions/): the entries pass tools in.",
      from: { path: "^lib/" },
      to: { path: "^(infra/|functions/)" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "\\.generated\\.ts$" },
  },
};

// The layer list, for the test that keeps docs/architecture.md true. Not enumerable: dependency-cruiser
// rejects unknown keys in its configuration, and it never sees this one.
Object.defineProperty(module.exports, "layers", { value: LAYERS, enumerable: false });
