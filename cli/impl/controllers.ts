import {
  type Controller,
  listWatchId,
  type PolicyRule,
  type ResourceType,
} from '../../core/contract/controller.ts';
import { loadRegistry } from '../../core/project.ts';
import { say, table } from '../output.ts';

/** `Kind (group/version, namespaced)`; core resources show `v1`. */
export function describeResource(r: ResourceType): string {
  return `${r.kind} (${r.group ? `${r.group}/` : ''}${r.version}${r.namespaced ? '' : ', cluster-scoped'})`;
}

/**
 * The kinds a controller owns, as controller-runtime's `Owns()` lists them: `Controller.owns` when
 * the controller declares it (the kit's `defineController`), else the secondary resources it
 * watches and may create (its RBAC grants `create` on them).
 */
export function ownedKinds(c: Controller): string[] {
  if (c.owns) return [...new Set(c.owns.map((r) => r.kind))];
  const creatable = (r: ResourceType) =>
    c.rbac.some(
      (rule) =>
        rule.apiGroups.includes(r.group) &&
        rule.resources.includes(r.plural) &&
        rule.verbs.includes('create'),
    );
  const kinds = c.watches.map((w) => w.resource).filter((r) => creatable(r));
  return [...new Set(kinds.map((r) => r.kind))];
}

function describeRule(rule: PolicyRule): string {
  return `${rule.apiGroups.map((g) => g || 'core').join(',')} ${rule.resources.join(',')}: ${rule.verbs.join(',')}`;
}

function describeWatch(w: Controller['watches'][number]): string {
  const scope = [w.namespace ? `ns ${w.namespace}` : '', w.labelSelector ? `-l ${w.labelSelector}` : '']
    .filter(Boolean)
    .join(' ');
  return `${w.resource.plural}${w.resource.group ? `.${w.resource.group}` : ''}${scope ? ` (${scope})` : ''}`;
}

/** Runs `levelset controllers`. */
export async function runControllers(argv: { output: string }): Promise<void> {
  const { controllers } = await loadRegistry();
  const rows = controllers.map((c) => ({
    name: c.name,
    primary: describeResource(c.primary),
    // One line per list+watch: an owned type also watched with another map (a ConfigMapBundle's
    // ConfigMaps) is one stream of events, routed to both maps.
    watches: [...new Map(c.watches.map((w) => [listWatchId(w), w])).values()].map(describeWatch),
    owns: ownedKinds(c),
    rbac: c.rbac.map(describeRule),
  }));
  if (argv.output === 'json') {
    say(JSON.stringify(rows, null, 2));
    return;
  }
  say(
    table(
      ['controller', 'primary', 'watches', 'owns', 'RBAC rules (reconcile)'],
      rows.map((r) => [r.name, r.primary, r.watches.join('\n'), r.owns.join('\n') || '-', r.rbac.join('\n')]),
    ),
  );
}
