/**
 * The layer rules of `.dependency-cruiser.cjs`, run through dependency-cruiser's JavaScript API: over the
 * repository, or over a fixture tree built in a temp dir. Violations come back with the rule's reason.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cruise, type ICruiseOptions, type ICruiseResult } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CONFIG_FILE = join(REPO_ROOT, ".dependency-cruiser.cjs");

/** One layer of the walk of a call, top first: its name, the path pattern of its files, and why it is there. */
export interface Layer {
  name: string;
  path: string;
  why: string;
}

interface Config {
  forbidden: { name: string; comment: string }[];
  /** Not enumerable in the config (dependency-cruiser rejects unknown keys), so read here by name. */
  layers: Layer[];
}

const config = createRequire(import.meta.url)(CONFIG_FILE) as Config;

/** The layers, top first, as the config declares them. */
export const LAYERS: readonly Layer[] = config.layers;
/** Every rule's name and reason, in the config's order. */
export const RULES: readonly { name: string; comment: string }[] = config.forbidden;

export interface Violation {
  rule: string;
  from: string;
  to: string;
  /** For a cycle: the modules around it. */
  cycle: string[];
  /** The rule's comment in the config. */
  reason: string;
}

/**
 * Cruises `roots` (relative to `baseDir`) with the config's rules and returns every violation.
 * The repository is cruised with its tsconfig; a fixture tree (any other `baseDir`) without one.
 */
export async function cruiseViolations(baseDir: string, roots: string[]): Promise<Violation[]> {
  const { tsConfig, ...options } = await extractDepcruiseOptions(CONFIG_FILE);
  const inRepo = baseDir === REPO_ROOT;
  const cruiseOptions: ICruiseOptions = inRepo
    ? { ...options, baseDir, tsConfig: { fileName: join(REPO_ROOT, tsConfig?.fileName ?? "tsconfig.json") } }
    : { ...options, baseDir };
  const transpile = inRepo ? { tsConfig: extractTSConfig(cruiseOptions.tsConfig!.fileName!) } : {};
  const { output } = await cruise(roots, cruiseOptions, {}, transpile);
  const result = output as ICruiseResult;
  const reasons = new Map(RULES.map((r) => [r.name, r.comment]));
  return result.summary.violations.map((v) => ({
    rule: v.rule.name,
    from: v.from,
    to: v.to,
    cycle: (v.cycle ?? []).map((c) => c.name),
    reason: reasons.get(v.rule.name) ?? "(a rule not in .dependency-cruiser.cjs)",
  }));
}

/** One violation per paragraph: the rule, the import, the cycle if any, and the reason. */
export function describeViolations(violations: Violation[]): string {
  return violations
    .map((v) => {
      const cycle = v.cycle.length ? `\n    cycle: ${[v.from, ...v.cycle].join(" → ")}` : "";
      return `${v.rule}: ${v.from} → ${v.to}${cycle}\n    why: ${v.reason}`;
    })
    .join("\n\n");
}
