/**
 * `meta.k8s.io/v1` Table responses (`kubectl get`), as kube-apiserver builds them:
 * - built-in kinds: the column definitions and cells of kubernetes/pkg/printers/internalversion
 *   (AddHandlers, printPod, printDeployment, printEvent …), always generated wide (the server sends
 *   every column; kubectl hides priority > 0 unless `-o wide`);
 * - custom resources: apiextensions-apiserver's tableconvertor over the CRD's
 *   `additionalPrinterColumns` (Kubernetes JSONPath, `./jsonpath.ts`), or NAME + AGE when it has none;
 * - everything else (CustomResourceDefinitions, Roles …): the generic rest.defaultTableConvertor,
 *   NAME + CREATED AT;
 * - rows' `object`: PartialObjectMetadata by default, the object or nothing with
 *   `?includeObject=Object|None` (apiserver handlers' `asTable`).
 */
import { timestampSince } from './duration.ts';
import { compileJsonPath } from './jsonpath.ts';
import { partialObjectMetadata } from './negotiation.ts';
import type { KubeObject, PrinterColumn, ResourceType } from './resources.ts';
import { badRequest } from './status.ts';

/** metav1.TableColumnDefinition. `priority` 0 is shown by default, 1 only with `-o wide`. */
export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/** metav1.TableRowCondition (pods that completed carry one). */
interface TableRowCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** One printed row: its cells (strings, integers, booleans or null, in column order) and conditions. */
interface PrintedRow {
  cells: unknown[];
  conditions?: TableRowCondition[];
}

interface Printer {
  columns: TableColumnDefinition[];
  print(obj: Obj, now: number): PrintedRow;
}

// biome-ignore lint/suspicious/noExplicitAny: printers read arbitrary wire JSON, as the Go printers read typed objects
type Obj = Record<string, any>;

// ObjectMeta swagger docs (k8s.io/apimachinery metav1.ObjectMeta{}.SwaggerDoc()).
const NAME_DOC =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
const CREATION_TIMESTAMP_DOC =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';
const CONTAINERS_DOC = 'Names of each container in the template.';
const IMAGES_DOC = 'Images referenced by each container in the template.';

function col(
  name: string,
  type: string,
  description: string,
  priority = 0,
  format = '',
): TableColumnDefinition {
  return { name, type, format, description, priority };
}
const nameCol = (priority = 0) => col('Name', 'string', NAME_DOC, priority, 'name');
const ageCol = () => col('Age', 'string', CREATION_TIMESTAMP_DOC);

const list = (v: unknown): Obj[] => (Array.isArray(v) ? (v as Obj[]) : []);
const rec = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const int = (v: unknown): number => (typeof v === 'number' ? Math.trunc(v) : 0);
const age = (o: Obj, now: number) => timestampSince(o.metadata?.creationTimestamp, now);

/** labels.FormatLabels: `k=v,…` sorted by key; `<none>` when empty. */
export function formatLabels(m: unknown): string {
  const entries = Object.entries(rec(m)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${String(v)}`).join(',') : '<none>';
}

/**
 * metav1.LabelSelectorAsSelector(…).String(): requirements sorted by key; `k=v`, `k in (a,b)`,
 * `k notin (a,b)`, `k`, `!k`. A missing selector selects nothing (""); an invalid one is null.
 */
export function labelSelectorString(selector: unknown): string | null {
  if (selector === undefined || selector === null) return '';
  const s = rec(selector);
  const reqs: [string, string][] = [];
  for (const [k, v] of Object.entries(rec(s.matchLabels))) reqs.push([k, `${k}=${String(v)}`]);
  for (const e of list(s.matchExpressions)) {
    const key = str(e.key);
    const values = list(e.values).map(String).sort();
    if (e.operator === 'In' || e.operator === 'NotIn') {
      if (values.length === 0) return null;
      reqs.push([key, `${key} ${e.operator === 'In' ? 'in' : 'notin'} (${values.join(',')})`]);
    } else if (e.operator === 'Exists' || e.operator === 'DoesNotExist') {
      if (values.length > 0) return null;
      reqs.push([key, e.operator === 'Exists' ? key : `!${key}`]);
    } else return null;
  }
  // selector.Add sorts requirements by key (stable for equal keys).
  return reqs
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, r]) => r)
    .join(',');
}

/** metav1.FormatLabelSelector: the selector string, `<none>` for an empty one, `<error>` for an invalid one. */
function formatLabelSelector(selector: unknown): string {
  const s = labelSelectorString(selector);
  if (s === null) return '<error>';
  return s === '' ? '<none>' : s;
}

/** layoutContainerCells: container names and images, comma-separated. */
function containerCells(podSpec: unknown): [string, string] {
  const containers = list(rec(podSpec).containers);
  return [containers.map((c) => str(c.name)).join(','), containers.map((c) => str(c.image)).join(',')];
}

// ---- Pods (printPod) ----

const isRestartableInit = (c: Obj | undefined) => c?.restartPolicy === 'Always';
const newer = (a: string, b: unknown) =>
  typeof b === 'string' && (a === '' || Date.parse(b) > Date.parse(a)) ? b : a;

function printPod(pod: Obj, now: number): PrintedRow {
  const spec = rec(pod.spec);
  const status = rec(pod.status);
  let restarts = 0;
  let restartableInitRestarts = 0;
  let totalContainers = list(spec.containers).length;
  let readyContainers = 0;
  let lastRestartDate = '';
  let lastRestartableInitRestartDate = '';
  const phase = str(status.phase);
  let reason = status.reason ? str(status.reason) : phase;
  for (const c of list(status.conditions)) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }
  const row: PrintedRow = { cells: [] };
  if (phase === 'Succeeded')
    row.conditions = [
      {
        type: 'Completed',
        status: 'True',
        reason: 'Succeeded',
        message: 'The pod has completed successfully.',
      },
    ];
  else if (phase === 'Failed')
    row.conditions = [{ type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' }];

  const initContainers = new Map<string, Obj>();
  for (const c of list(spec.initContainers)) {
    initContainers.set(str(c.name), c);
    if (isRestartableInit(c)) totalContainers++;
  }
  const initStatuses = list(status.initContainerStatuses);
  let initializing = false;
  for (const [i, c] of initStatuses.entries()) {
    restarts += int(c.restartCount);
    const lastTerminated = rec(c.lastState).terminated;
    if (lastTerminated) lastRestartDate = newer(lastRestartDate, lastTerminated.finishedAt);
    const restartable = isRestartableInit(initContainers.get(str(c.name)));
    if (restartable) {
      restartableInitRestarts += int(c.restartCount);
      if (lastTerminated)
        lastRestartableInitRestartDate = newer(lastRestartableInitRestartDate, lastTerminated.finishedAt);
    }
    const terminated = rec(c.state).terminated as Obj | undefined;
    const waiting = rec(c.state).waiting as Obj | undefined;
    if (terminated && int(terminated.exitCode) === 0) continue;
    if (restartable && c.started === true) {
      if (c.ready) readyContainers++;
      continue;
    }
    if (terminated) {
      if (!terminated.reason) {
        reason = terminated.signal
          ? `Init:Signal:${int(terminated.signal)}`
          : `Init:ExitCode:${int(terminated.exitCode)}`;
      } else reason = `Init:${str(terminated.reason)}`;
    } else if (waiting?.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${str(waiting.reason)}`;
    } else {
      reason = `Init:${i}/${list(spec.initContainers).length}`;
    }
    initializing = true;
    break;
  }

  const initialized = list(status.conditions).some((c) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initialized) {
    restarts = restartableInitRestarts;
    lastRestartDate = lastRestartableInitRestartDate;
    let hasRunning = false;
    const statuses = list(status.containerStatuses);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i] as Obj;
      restarts += int(c.restartCount);
      const lastTerminated = rec(c.lastState).terminated;
      if (lastTerminated) lastRestartDate = newer(lastRestartDate, lastTerminated.finishedAt);
      const waiting = rec(c.state).waiting as Obj | undefined;
      const terminated = rec(c.state).terminated as Obj | undefined;
      if (waiting?.reason) reason = str(waiting.reason);
      else if (terminated?.reason) reason = str(terminated.reason);
      else if (terminated) {
        reason = terminated.signal
          ? `Signal:${int(terminated.signal)}`
          : `ExitCode:${int(terminated.exitCode)}`;
      } else if (c.ready && rec(c.state).running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      const podReady = list(status.conditions).some((c) => c.type === 'Ready' && c.status === 'True');
      reason = podReady ? 'Running' : 'NotReady';
    }
  }

  if (pod.metadata?.deletionTimestamp && status.reason === 'NodeLost') reason = 'Unknown';
  else if (pod.metadata?.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed')
    reason = 'Terminating';

  let restartsCell = String(restarts);
  if (restarts !== 0 && lastRestartDate !== '')
    restartsCell = `${restarts} (${timestampSince(lastRestartDate, now)} ago)`;

  const podIP = str(list(status.podIPs)[0]?.ip) || '<none>';
  let readinessGates = '<none>';
  const gates = list(spec.readinessGates);
  if (gates.length > 0) {
    let trueConditions = 0;
    for (const g of gates) {
      const cond = list(status.conditions).find((c) => c.type === g.conditionType);
      if (cond?.status === 'True') trueConditions++;
    }
    readinessGates = `${trueConditions}/${gates.length}`;
  }
  row.cells = [
    pod.metadata?.name ?? '',
    `${readyContainers}/${totalContainers}`,
    reason,
    restartsCell,
    age(pod, now),
    podIP,
    str(spec.nodeName) || '<none>',
    str(status.nominatedNodeName) || '<none>',
    readinessGates,
  ];
  return row;
}

// ---- Events (printEvent), from the core/v1 form ----

function printEvent(e: Obj, now: number): PrintedRow {
  let firstTimestamp = timestampSince(e.firstTimestamp, now);
  if (!e.firstTimestamp) firstTimestamp = timestampSince(e.eventTime, now);
  let lastTimestamp = timestampSince(e.lastTimestamp, now);
  if (!e.lastTimestamp) lastTimestamp = firstTimestamp;
  let count = int(e.count);
  if (e.series) {
    lastTimestamp = timestampSince(rec(e.series).lastObservedTime, now);
    count = int(rec(e.series).count);
  } else if (count === 0) count = 1; // singleton events have no count in the events.k8s.io API
  const involved = rec(e.involvedObject);
  const kind = str(involved.kind).toLowerCase();
  const target = involved.name ? `${kind}/${str(involved.name)}` : kind;
  const component = str(rec(e.source).component) || str(e.reportingComponent);
  const host = str(rec(e.source).host) || str(e.reportingInstance);
  return {
    cells: [
      lastTimestamp,
      str(e.type),
      str(e.reason),
      target,
      str(involved.fieldPath),
      host ? `${component}, ${host}` : component,
      str(e.message).trim(),
      firstTimestamp,
      count,
      e.metadata?.name ?? '',
    ],
  };
}

// ---- Services (printService) ----

function serviceExternalIP(svc: Obj): string {
  const spec = rec(svc.spec);
  const externalIPs = list(spec.externalIPs).map(String);
  switch (spec.type ?? 'ClusterIP') {
    case 'ClusterIP':
    case 'NodePort':
      return externalIPs.length ? externalIPs.join(',') : '<none>';
    case 'LoadBalancer': {
      // loadBalancerStatusStringer(wide): the ingress IPs/hostnames, sorted and deduplicated.
      const ingress = [
        ...new Set(list(rec(rec(svc.status).loadBalancer).ingress).map((i) => str(i.ip) || str(i.hostname))),
      ]
        .filter(Boolean)
        .sort();
      if (externalIPs.length) return [...ingress, ...externalIPs].join(',');
      return ingress.length ? ingress.join(',') : '<pending>';
    }
    case 'ExternalName':
      return str(spec.externalName);
  }
  return '<unknown>';
}

function printService(svc: Obj, now: number): PrintedRow {
  const spec = rec(svc.spec);
  const ports = list(spec.ports)
    .map((p) =>
      int(p.nodePort) > 0
        ? `${int(p.port)}:${int(p.nodePort)}/${str(p.protocol)}`
        : `${int(p.port)}/${str(p.protocol)}`,
    )
    .join(',');
  return {
    cells: [
      svc.metadata?.name ?? '',
      str(spec.type),
      str(list(spec.clusterIPs)[0]) || '<none>',
      serviceExternalIP(svc),
      ports || '<none>',
      age(svc, now),
      formatLabels(spec.selector),
    ],
  };
}

/** kubectl's node roles (printers.go findNodeRoles): `node-role.kubernetes.io/<role>` labels and `kubernetes.io/role`. */
function nodeRoles(node: Obj): string[] {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries((node.metadata?.labels ?? {}) as Record<string, string>)) {
    if (k.startsWith('node-role.kubernetes.io/')) {
      const role = k.slice('node-role.kubernetes.io/'.length);
      if (role) roles.add(role);
    } else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  return [...roles].sort();
}

/** printNode (pkg/printers/internalversion/printers.go), with the wide columns as the table convertor asks. */
function printNode(node: Obj, now: number): PrintedRow {
  const status = rec(node.status);
  const ready = list(status.conditions).find((c) => c.type === 'Ready');
  const states = ready ? [ready.status === 'True' ? 'Ready' : 'NotReady'] : ['Unknown'];
  if (rec(node.spec).unschedulable === true) states.push('SchedulingDisabled');
  const address = (type: string) =>
    str(list(status.addresses).find((a) => a.type === type)?.address) || '<none>';
  const info = rec(status.nodeInfo);
  const known = (v: unknown) => str(v) || '<unknown>';
  return {
    cells: [
      node.metadata?.name ?? '',
      states.join(','),
      nodeRoles(node).join(',') || '<none>',
      age(node, now),
      str(info.kubeletVersion),
      address('InternalIP'),
      address('ExternalIP'),
      known(info.osImage),
      known(info.kernelVersion),
      known(info.containerRuntimeVersion),
    ],
  };
}

const NODE_ADDRESSES_DOC =
  "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

// ---- The built-in printers, keyed by `<group>/<plural>` ----

const BUILTIN_PRINTERS: Record<string, Printer> = {
  '/pods': {
    columns: [
      nameCol(),
      col('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
      col('Status', 'string', 'The aggregate status of the containers in this pod.'),
      col(
        'Restarts',
        'string',
        'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
      ),
      ageCol(),
      col(
        'IP',
        'string',
        'podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.',
        1,
      ),
      col(
        'Node',
        'string',
        'NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename',
        1,
      ),
      col(
        'Nominated Node',
        'string',
        'nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.',
        1,
      ),
      col(
        'Readiness Gates',
        'string',
        'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
        1,
      ),
    ],
    print: printPod,
  },
  'apps/deployments': {
    columns: [
      nameCol(),
      col('Ready', 'string', 'Number of the pod with ready state'),
      col(
        'Up-to-date',
        'string',
        'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
      ),
      col(
        'Available',
        'string',
        'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
      ),
      ageCol(),
      col('Containers', 'string', CONTAINERS_DOC, 1),
      col('Images', 'string', IMAGES_DOC, 1),
      col(
        'Selector',
        'string',
        'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.',
        1,
      ),
    ],
    print(d, now) {
      const spec = rec(d.spec);
      const status = rec(d.status);
      const [names, images] = containerCells(rec(spec.template).spec);
      const selector = labelSelectorString(spec.selector);
      return {
        cells: [
          d.metadata?.name ?? '',
          `${int(status.readyReplicas)}/${int(spec.replicas)}`,
          int(status.updatedReplicas),
          int(status.availableReplicas),
          age(d, now),
          names,
          images,
          selector ?? '<invalid>',
        ],
      };
    },
  },
  'apps/replicasets': {
    columns: [
      nameCol(),
      col('Desired', 'integer', 'Replicas is the number of desired pods.'),
      col('Current', 'integer', 'Replicas is the most recently observed number of replicas.'),
      col('Ready', 'integer', 'The number of ready replicas for this replica set.'),
      ageCol(),
      col('Containers', 'string', CONTAINERS_DOC, 1),
      col('Images', 'string', IMAGES_DOC, 1),
      col(
        'Selector',
        'string',
        'Selector is a label query over pods that should match the replica count.',
        1,
      ),
    ],
    print(rs, now) {
      const spec = rec(rs.spec);
      const status = rec(rs.status);
      const [names, images] = containerCells(rec(spec.template).spec);
      return {
        cells: [
          rs.metadata?.name ?? '',
          int(spec.replicas),
          int(status.replicas),
          int(status.readyReplicas),
          age(rs, now),
          names,
          images,
          formatLabelSelector(spec.selector),
        ],
      };
    },
  },
  '/events': {
    columns: [
      col('Last Seen', 'string', 'The time at which the most recent occurrence of this event was recorded.'),
      col('Type', 'string', 'Type of this event (Normal, Warning), new types could be added in the future'),
      col(
        'Reason',
        'string',
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
      ),
      col('Object', 'string', 'The object that this event is about.'),
      col(
        'Subobject',
        'string',
        'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.',
        1,
      ),
      col(
        'Source',
        'string',
        'The component reporting this event. Should be a short machine understandable string.',
        1,
      ),
      col('Message', 'string', 'A human-readable description of the status of this operation.'),
      col(
        'First Seen',
        'string',
        'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)',
        1,
      ),
      col('Count', 'string', 'The number of times this event has occurred.', 1),
      nameCol(1),
    ],
    print: printEvent,
  },
  '/nodes': {
    columns: [
      nameCol(),
      col('Status', 'string', 'The status of the node'),
      col('Roles', 'string', 'The roles of the node'),
      ageCol(),
      col('Version', 'string', 'Kubelet Version reported by the node.'),
      col('Internal-IP', 'string', NODE_ADDRESSES_DOC, 1),
      col('External-IP', 'string', NODE_ADDRESSES_DOC, 1),
      col(
        'OS-Image',
        'string',
        'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
        1,
      ),
      col(
        'Kernel-Version',
        'string',
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        1,
      ),
      col(
        'Container-Runtime',
        'string',
        'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
        1,
      ),
    ],
    print: printNode,
  },
  '/namespaces': {
    columns: [nameCol(), col('Status', 'string', 'The status of the namespace'), ageCol()],
    print: (ns, now) => ({ cells: [ns.metadata?.name ?? '', str(rec(ns.status).phase), age(ns, now)] }),
  },
  '/secrets': {
    columns: [
      nameCol(),
      col(
        'Type',
        'string',
        'Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types',
      ),
      col(
        'Data',
        'string',
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
      ),
      ageCol(),
    ],
    print: (s, now) => ({
      cells: [s.metadata?.name ?? '', str(s.type), Object.keys(rec(s.data)).length, age(s, now)],
    }),
  },
  '/configmaps': {
    columns: [
      nameCol(),
      col(
        'Data',
        'string',
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
      ),
      ageCol(),
    ],
    print: (cm, now) => ({
      cells: [
        cm.metadata?.name ?? '',
        Object.keys(rec(cm.data)).length + Object.keys(rec(cm.binaryData)).length,
        age(cm, now),
      ],
    }),
  },
  '/services': {
    columns: [
      nameCol(),
      col('Type', 'string', 'type determines how the Service is exposed. Defaults to ClusterIP.'),
      col(
        'Cluster-IP',
        'string',
        'clusterIP is the IP address of the service and is usually assigned randomly.',
      ),
      col(
        'External-IP',
        'string',
        'externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.',
      ),
      col('Port(s)', 'string', 'The list of ports that are exposed by this service.'),
      ageCol(),
      col(
        'Selector',
        'string',
        'Route service traffic to pods with label keys and values matching this selector.',
        1,
      ),
    ],
    print: printService,
  },
  '/serviceaccounts': {
    columns: [
      nameCol(),
      col(
        'Secrets',
        'string',
        'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.',
      ),
      ageCol(),
    ],
    print: (sa, now) => ({ cells: [sa.metadata?.name ?? '', list(sa.secrets).length, age(sa, now)] }),
  },
  'coordination.k8s.io/leases': {
    columns: [
      nameCol(),
      col('Holder', 'string', 'holderIdentity contains the identity of the holder of a current lease.'),
      ageCol(),
    ],
    print: (l, now) => ({ cells: [l.metadata?.name ?? '', str(rec(l.spec).holderIdentity), age(l, now)] }),
  },
};

function printBinding(b: Obj, now: number): PrintedRow {
  const roleRef = rec(b.roleRef);
  const users: string[] = [];
  const groups: string[] = [];
  const sas: string[] = [];
  for (const s of list(b.subjects)) {
    if (s.kind === 'User') users.push(str(s.name));
    else if (s.kind === 'Group') groups.push(str(s.name));
    else if (s.kind === 'ServiceAccount')
      sas.push(s.namespace ? `${str(s.namespace)}/${str(s.name)}` : str(s.name));
  }
  return {
    cells: [
      b.metadata?.name ?? '',
      `${str(roleRef.kind)}/${str(roleRef.name)}`,
      age(b, now),
      users.join(', '),
      groups.join(', '),
      sas.join(', '),
    ],
  };
}
for (const [plural, what] of [
  ['rolebindings', 'roleBinding'],
  ['clusterrolebindings', 'clusterRoleBinding'],
] as const) {
  BUILTIN_PRINTERS[`rbac.authorization.k8s.io/${plural}`] = {
    columns: [
      nameCol(),
      col(
        'Role',
        'string',
        'RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.',
      ),
      ageCol(),
      col('Users', 'string', `Users in the ${what}`, 1),
      col('Groups', 'string', `Groups in the ${what}`, 1),
      col('ServiceAccounts', 'string', `ServiceAccounts in the ${what}`, 1),
    ],
    print: printBinding,
  };
}
// events.k8s.io/v1 Events print as core Events (one internal type in kube-apiserver).
BUILTIN_PRINTERS['events.k8s.io/events'] = BUILTIN_PRINTERS['/events'] as Printer;

/** rest.defaultTableConvertor: NAME and CREATED AT (RFC 3339, UTC, seconds), for kinds without a printer. */
const DEFAULT_PRINTER: Printer = {
  columns: [nameCol(), col('Created At', 'date', CREATION_TIMESTAMP_DOC)],
  print: (o) => ({ cells: [o.metadata?.name ?? '', rfc3339(o.metadata?.creationTimestamp)] }),
};

/** Go's `t.UTC().Format(time.RFC3339)`; the zero time for a missing timestamp. */
function rfc3339(ts: unknown): string {
  const t = typeof ts === 'string' ? Date.parse(ts) : Number.NaN;
  if (Number.isNaN(t)) return '0001-01-01T00:00:00Z';
  return new Date(Math.floor(t / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

// ---- Custom resources (apiextensions-apiserver tableconvertor) ----

/**
 * The CRD's printer columns, or AGE (`.metadata.creationTimestamp`, type date) when it has none
 * (apiextensions-apiserver serveDefaultColumnsIfEmpty); NAME always comes first.
 */
function customPrinter(printerColumns: PrinterColumn[]): Printer {
  const columns: PrinterColumn[] = printerColumns.length
    ? printerColumns
    : [
        {
          name: 'Age',
          type: 'date',
          jsonPath: '.metadata.creationTimestamp',
          description: CREATION_TIMESTAMP_DOC,
        },
      ];
  const queries = columns.map((c) => {
    try {
      return compileJsonPath(c.jsonPath);
    } catch {
      return () => [];
    }
  });
  return {
    columns: [
      nameCol(),
      ...columns.map((c) =>
        col(
          c.name,
          c.type,
          c.description || `Custom resource definition column (in JSONPath format): ${c.jsonPath}`,
          c.priority ?? 0,
          c.format ?? '',
        ),
      ),
    ],
    print(o, now) {
      const cells: unknown[] = [o.metadata?.name ?? ''];
      columns.forEach((c, i) => {
        let results: unknown[];
        try {
          results = (queries[i] as (obj: unknown) => unknown[])(o);
        } catch {
          results = [];
        }
        // Only the first result counts (tableconvertor: results[0][0]); nothing → null.
        cells.push(results.length === 0 ? null : printerCell(c.type, results[0], now));
      });
      return { cells };
    },
  };
}

/**
 * One printer-column cell, as tableconvertor formats a JSONPath result: `string` columns print the value
 * as kubectl's JSONPath does (strings as is, objects and arrays as JSON, numbers and booleans as text);
 * other types keep a value of that JSON type (integers truncated) and are null otherwise; `date`
 * columns are the human age of an RFC 3339 timestamp ("<invalid>" if unparsable).
 */
export function printerCell(type: string, value: unknown, now = Date.now()): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'string':
      if (typeof value === 'string') return value;
      if (typeof value === 'object') return JSON.stringify(value);
      return String(value);
    case 'integer':
      return typeof value === 'number' ? Math.trunc(value) : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date':
      if (typeof value !== 'string') return null;
      if (value === '' || value === 'null') return '<unknown>';
      return Number.isNaN(Date.parse(value)) ? '<invalid>' : timestampSince(value, now);
  }
  return null;
}

const customPrinters = new WeakMap<PrinterColumn[], Printer>();

function printerFor(t: ResourceType): Printer {
  if (t.custom) {
    let p = customPrinters.get(t.custom.printerColumns);
    if (!p) {
      p = customPrinter(t.custom.printerColumns);
      customPrinters.set(t.custom.printerColumns, p);
    }
    return p;
  }
  return BUILTIN_PRINTERS[`${t.group}/${t.plural}`] ?? DEFAULT_PRINTER;
}

/** The column definitions a Table of `t` has (exported for tests and docs). */
export function columnDefinitions(t: ResourceType): TableColumnDefinition[] {
  return printerFor(t).columns;
}

/** `?includeObject=` checked as the handlers' asTable does: Metadata (default), Object or None. */
function includeObjectOf(includeObject: string | null): string {
  const include = includeObject || 'Metadata';
  if (!['Metadata', 'Object', 'None'].includes(include))
    throw badRequest(`unrecognized includeObject value: "${include}"`);
  return include;
}

function buildTable(
  t: ResourceType,
  objects: KubeObject[],
  listMeta: Record<string, unknown>,
  version: string,
  include: string,
  headers: boolean,
  now: number,
): Record<string, unknown> {
  const printer = printerFor(t);
  // Built-in printers read the internal (storage) form: events.k8s.io Events print as core Events.
  const printable = (o: KubeObject): Obj => (!t.custom && t.toStorage ? t.toStorage(o) : o);
  const rows = objects.map((o) => {
    const printed = printer.print(printable(o), now);
    const row: Record<string, unknown> = { cells: printed.cells };
    if (printed.conditions) row.conditions = printed.conditions;
    // RawExtension of a nil object marshals as null (includeObject=None).
    row.object = include === 'Object' ? o : include === 'Metadata' ? partialObjectMetadata(o, version) : null;
    return row;
  });
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: listMeta,
    // TableOptions.NoHeaders leaves the (non-omitempty) slice nil: null on the wire.
    columnDefinitions: headers ? printer.columns : null,
    rows,
  };
}

/**
 * metav1.Table for objects of `t` (a list, or one object for a get).
 * @param objects the objects in the requested version
 * @param listMeta the Table's ListMeta (resourceVersion, continue, remainingItemCount)
 * @param version meta.k8s.io version asked for (`v1` or `v1beta1`)
 * @param includeObject `?includeObject=`: `Metadata` (default) → PartialObjectMetadata, `Object`, `None`
 * @throws ApiError 400 for another includeObject value
 */
export function table(
  t: ResourceType,
  objects: KubeObject[],
  listMeta: Record<string, unknown>,
  version: string,
  includeObject: string | null,
  now = Date.now(),
): unknown {
  return buildTable(t, objects, listMeta, version, includeObjectOf(includeObject), true, now);
}

/**
 * The render of watch events asked for as Table (`kubectl get -w`): each event's object is a one-row
 * Table with the object's resourceVersion; only the first carries column definitions (the watch
 * encoder sets TableOptions.NoHeaders after the first event).
 * @throws ApiError 400 for an unknown includeObject value (before the watch starts)
 */
export function tableWatchRender(
  t: ResourceType,
  version: string,
  includeObject: string | null,
): (obj: KubeObject) => unknown {
  const include = includeObjectOf(includeObject);
  let headers = true;
  return (obj) => {
    const out = buildTable(
      t,
      [obj],
      { resourceVersion: obj.metadata.resourceVersion },
      version,
      include,
      headers,
      Date.now(),
    );
    headers = false;
    return out;
  };
}
