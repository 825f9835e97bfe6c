/**
 * Authentication with bearer tokens (static user tokens and ServiceAccount tokens from the TokenRequest
 * API) and RBAC authorization (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac): Roles, ClusterRoles,
 * RoleBindings, ClusterRoleBindings for users, groups and ServiceAccounts; `system:masters` bypasses it.
 * Forbidden messages are worded as kube-apiserver's.
 */
import { randomBytes } from 'node:crypto';
import type { RequestInfo } from './requestinfo.ts';
import type { KubeObject } from './resources.ts';
import { ApiError, forbidden } from './status.ts';
import { objectKey, type Store } from './store.ts';

/** An authenticated identity (user.Info). */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
}

export const ANONYMOUS: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

interface ServiceAccountToken {
  namespace: string;
  name: string;
  uid: string;
  expiresAt: number;
}

export function serviceAccountUser(namespace: string, name: string, uid?: string): UserInfo {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    ...(uid ? { uid } : {}),
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
  };
}

/** Bearer-token authentication. */
export class Authenticator {
  private readonly users = new Map<string, UserInfo>();
  private readonly saTokens = new Map<string, ServiceAccountToken>();
  private readonly store: Store;
  private readonly anonymous: UserInfo;

  /**
   * @param anonymous who a request without credentials is: kube-apiserver's `system:anonymous`, or —
   * because kubectl (client-go) never sends a bearer token over plain HTTP — the cluster admin, as
   * kube-apiserver's old insecure port did.
   */
  constructor(store: Store, anonymous: UserInfo = ANONYMOUS) {
    this.store = store;
    this.anonymous = anonymous;
  }

  /** Registers a static token for a user (`system:authenticated` is added to its groups). */
  addToken(token: string, user: UserInfo): void {
    this.users.set(token, { ...user, groups: [...new Set([...user.groups, 'system:authenticated'])] });
  }

  /** Creates a user with a fresh bearer token. @returns the token */
  addUser(name: string, groups: string[] = []): string {
    const token = randomBytes(24).toString('hex');
    this.addToken(token, { name, groups });
    return token;
  }

  /** Issues a token for a ServiceAccount (TokenRequest); valid while the ServiceAccount (same uid) exists. */
  issueServiceAccountToken(
    namespace: string,
    name: string,
    uid: string,
    expirationSeconds: number,
  ): { token: string; expirationTimestamp: string } {
    const token = `sa.${randomBytes(24).toString('hex')}`;
    const expiresAt = Date.now() + expirationSeconds * 1000;
    this.saTokens.set(token, { namespace, name, uid, expiresAt });
    return { token, expirationTimestamp: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z') };
  }

  /**
   * Authenticates an `Authorization` header.
   * @returns the user, the anonymous identity without a header, `undefined` for a token that is not valid (→ 401)
   */
  authenticate(authorization: string | undefined): UserInfo | undefined {
    if (!authorization) return this.anonymous;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) return undefined;
    const token = m[1] as string;
    const user = this.users.get(token);
    if (user) return user;
    const sa = this.saTokens.get(token);
    if (!sa) return undefined;
    const current = this.store.get('/serviceaccounts', objectKey(sa.namespace, sa.name));
    if (!current || current.metadata.uid !== sa.uid || Date.now() > sa.expiresAt) return undefined;
    return serviceAccountUser(sa.namespace, sa.name, sa.uid);
  }
}

interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

function subjectMatches(s: Subject, user: UserInfo, bindingNamespace: string): boolean {
  if (s.kind === 'User') return s.name === user.name;
  if (s.kind === 'Group') return user.groups.includes(s.name);
  if (s.kind === 'ServiceAccount')
    return user.name === `system:serviceaccount:${s.namespace || bindingNamespace}:${s.name}`;
  return false;
}

function ruleAllows(rule: PolicyRule, info: RequestInfo): boolean {
  const has = (list: string[] | undefined, v: string) =>
    (list ?? []).includes(v) || (list ?? []).includes('*');
  if (!has(rule.verbs, info.verb)) return false;
  if (!info.isResource) {
    return (rule.nonResourceURLs ?? []).some(
      (u) => u === info.path || u === '*' || (u.endsWith('*') && info.path.startsWith(u.slice(0, -1))),
    );
  }
  if (!has(rule.apiGroups, info.apiGroup)) return false;
  const combined = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
  const resources = rule.resources ?? [];
  if (
    !resources.includes(combined) &&
    !resources.includes('*') &&
    !(info.subresource && resources.includes(`*/${info.subresource}`))
  )
    return false;
  if (rule.resourceNames && rule.resourceNames.length > 0)
    return info.name !== '' && rule.resourceNames.includes(info.name);
  return true;
}

/** RBAC authorizer reading the rbac.authorization.k8s.io objects from the store. */
export class Authorizer {
  private readonly store: Store;

  constructor(store: Store) {
    this.store = store;
  }

  private rulesOf(roleRef: { kind?: string; name?: string } | undefined, namespace: string): PolicyRule[] {
    if (!roleRef?.name) return [];
    const role =
      roleRef.kind === 'ClusterRole'
        ? this.store.get('rbac.authorization.k8s.io/clusterroles', roleRef.name)
        : this.store.get('rbac.authorization.k8s.io/roles', objectKey(namespace, roleRef.name));
    return ((role?.rules as PolicyRule[] | undefined) ?? []).filter(Boolean);
  }

  /** Whether `user` may make the request. */
  allowed(user: UserInfo, info: RequestInfo): boolean {
    if (user.groups.includes('system:masters')) return true;
    const check = (binding: Readonly<KubeObject>, ns: string) => {
      const subjects = (binding.subjects as Subject[] | undefined) ?? [];
      if (!subjects.some((s) => s && subjectMatches(s, user, ns))) return false;
      return this.rulesOf(binding.roleRef as { kind?: string; name?: string }, ns).some((r) =>
        ruleAllows(r, info),
      );
    };
    // Read in place (the bindings are only read), as kube-apiserver's authorizer reads its informer cache.
    let allowed = false;
    this.store.walk('rbac.authorization.k8s.io/clusterrolebindings', {}, (b) => {
      allowed = check(b, '');
      return !allowed;
    });
    if (!allowed && info.isResource && info.namespace) {
      const namespace = info.namespace;
      this.store.walk('rbac.authorization.k8s.io/rolebindings', { namespace }, (b) => {
        allowed = check(b, namespace);
        return !allowed;
      });
    }
    return allowed;
  }

  /** The 403 kube-apiserver returns for a denied request. */
  forbiddenError(user: UserInfo, info: RequestInfo): ApiError {
    if (!info.isResource) {
      return new ApiError({
        message: `forbidden: User "${user.name}" cannot ${info.verb} path "${info.path}"`,
        reason: 'Forbidden',
        details: {},
        code: 403,
      });
    }
    const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    const scope = info.namespace ? `in the namespace "${info.namespace}"` : 'at the cluster scope';
    return forbidden(
      { group: info.apiGroup, resource: info.resource },
      info.name,
      `User "${user.name}" cannot ${info.verb} resource "${resource}" in API group "${info.apiGroup}" ${scope}`,
    );
  }
}

/** The bootstrap ClusterRoles/ClusterRoleBindings every cluster has (the subset that matters here). */
export function bootstrapRbac(): { clusterRoles: KubeObject[]; clusterRoleBindings: KubeObject[] } {
  const role = (name: string, rules: PolicyRule[]): KubeObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: {
      name,
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    rules,
  });
  const binding = (name: string, roleName: string, groups: string[]): KubeObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: {
      name,
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
    subjects: groups.map((g) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: g })),
  });
  const readVerbs = ['get', 'list', 'watch'];
  const writeVerbs = ['create', 'delete', 'deletecollection', 'patch', 'update'];
  return {
    clusterRoles: [
      role('cluster-admin', [
        { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
        { nonResourceURLs: ['*'], verbs: ['*'] },
      ]),
      role('system:discovery', [
        {
          nonResourceURLs: [
            '/api',
            '/api/*',
            '/apis',
            '/apis/*',
            '/healthz',
            '/livez',
            '/openapi',
            '/openapi/*',
            '/readyz',
            '/version',
            '/version/',
          ],
          verbs: ['get'],
        },
      ]),
      role('system:public-info-viewer', [
        { nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'], verbs: ['get'] },
      ]),
      role('system:basic-user', [
        {
          apiGroups: ['authorization.k8s.io'],
          resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
          verbs: ['create'],
        },
        { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
      ]),
      role('view', [
        {
          apiGroups: [''],
          resources: [
            'configmaps',
            'endpoints',
            'persistentvolumeclaims',
            'pods',
            'replicationcontrollers',
            'serviceaccounts',
            'services',
            'events',
            'namespaces',
          ],
          verbs: readVerbs,
        },
        {
          apiGroups: ['apps'],
          resources: ['deployments', 'replicasets', 'statefulsets', 'daemonsets'],
          verbs: readVerbs,
        },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: readVerbs },
      ]),
      role('edit', [
        {
          apiGroups: [''],
          resources: ['configmaps', 'pods', 'secrets', 'serviceaccounts', 'events'],
          verbs: [...readVerbs, ...writeVerbs],
        },
        { apiGroups: ['apps'], resources: ['deployments'], verbs: [...readVerbs, ...writeVerbs] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: [...readVerbs, ...writeVerbs] },
        { apiGroups: [''], resources: ['namespaces'], verbs: readVerbs },
      ]),
    ],
    clusterRoleBindings: [
      binding('cluster-admin', 'cluster-admin', ['system:masters']),
      binding('system:discovery', 'system:discovery', ['system:authenticated']),
      binding('system:public-info-viewer', 'system:public-info-viewer', [
        'system:authenticated',
        'system:unauthenticated',
      ]),
      binding('system:basic-user', 'system:basic-user', ['system:authenticated']),
    ],
  };
}
