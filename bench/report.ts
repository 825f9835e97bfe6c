/**
 * The benchmark's figures, statistics, SVG chart and Markdown report (`npm run bench`, bench/run.ts).
 */
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import type { CostRow } from './cost.ts';

/** One measured figure, with the baseline it is compared to, measured in the same run. */
export interface Figure {
  /** Section id: `e2e`, `throughput`, `collapse`, `relay`, `api-cost`, `admission`, `webhooks`, `cost`, `resync`, `cold-start`, `build`, `topic`, `tracing`, `fleet`, `retries`, `peer`. */
  section: string;
  /** What it is, e.g. `secret change → every copy converged, p50`. */
  name: string;
  value: number;
  unit: string;
  /** The same measurement of the baseline, when there is one. */
  baseline?: { name: string; value: number };
  /** Target from the issue, as text (e.g. `≤ 25 ms`), and whether the value meets it. */
  target?: { text: string; met: boolean };
}

/** A maker of `section`'s figures: `figure(name, value, unit, baseline?, target?)`. */
export function figuresOf(section: string) {
  return (
    name: string,
    value: number,
    unit: string,
    baseline?: Figure['baseline'],
    target?: Figure['target'],
  ): Figure => ({ section, name, value, unit, ...(baseline && { baseline }), ...(target && { target }) });
}

/**
 * A maker of `section`'s figures comparing `run` to `baseline`, measured alike:
 * `figure(name, unit, of, target?)` is `of(run)` beside `of(baseline)`, named `baselineName`.
 */
export function comparing<T>(section: string, run: T, baseline: T, baselineName: string) {
  const figure = figuresOf(section);
  return (name: string, unit: string, of: (r: T) => number, target?: Figure['target']) =>
    figure(name, of(run), unit, { name: baselineName, value: of(baseline) }, target);
}

/** Percentiles (nearest rank) of a sample, in the sample's unit. */
export function quantiles(xs: readonly number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? Number.NaN;
  return { n: s.length, p50: q(0.5), p95: q(0.95), p99: q(0.99) };
}

/** The machine a run measured: CPUs, memory, Node, load at the start. */
export function machine(): Record<string, string | number> {
  const c = cpus();
  return {
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryBytes: totalmem(),
    freeMemoryBytesAtStart: freemem(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadAverage: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
}

const round = (x: number) => (Math.abs(x) >= 100 ? Math.round(x) : Math.round(x * 100) / 100);

/** `value / baseline`, rounded; `—` without a baseline. */
export function ratio(f: Figure): string {
  if (!f.baseline?.value) return '—';
  return `${round(f.value / f.baseline.value)}×`;
}

export interface Series {
  name: string;
  /** Latencies in ms. */
  values: number[];
}

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * An SVG chart of empirical CDFs (x: latency in ms, log scale; y: fraction of samples ≤ x), one
 * line per series.
 */
export function cdfChart(title: string, series: readonly Series[]): string {
  const W = 760;
  const H = 360;
  const m = { l: 60, r: 20, t: 30, b: 90 };
  const all = series.flatMap((s) => s.values).filter((v) => v > 0);
  if (all.length === 0) all.push(1, 1000); // no latencies measured (sections left out): empty axes
  const lo = Math.max(0.1, Math.min(...all));
  const hi = Math.max(lo * 10, Math.max(...all));
  const lx0 = Math.floor(Math.log10(lo));
  const lx1 = Math.ceil(Math.log10(hi));
  const x = (v: number) => m.l + ((Math.log10(Math.max(v, 10 ** lx0)) - lx0) / (lx1 - lx0)) * (W - m.l - m.r);
  const y = (p: number) => H - m.b - p * (H - m.t - m.b);
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="18" text-anchor="middle" font-size="14">${escapeXml(title)}</text>`,
  ];
  for (let e = lx0; e <= lx1; e++) {
    const px = x(10 ** e);
    out.push(
      `<line x1="${px}" y1="${m.t}" x2="${px}" y2="${H - m.b}" stroke="#ddd"/>`,
      `<text x="${px}" y="${H - m.b + 16}" text-anchor="middle">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(1)} ms</text>`,
    );
  }
  for (const p of [0, 0.25, 0.5, 0.75, 0.95, 1]) {
    out.push(
      `<line x1="${m.l}" y1="${y(p)}" x2="${W - m.r}" y2="${y(p)}" stroke="#eee"/>`,
      `<text x="${m.l - 6}" y="${y(p) + 4}" text-anchor="end">${p}</text>`,
    );
  }
  series.forEach((s, i) => {
    const sorted = [...s.values].sort((a, b) => a - b);
    const pts = sorted.map((v, k) => `${x(v).toFixed(1)},${y((k + 1) / sorted.length).toFixed(1)}`);
    const color = colors[i % colors.length];
    if (pts.length)
      out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>`);
    const ly = H - m.b + 34 + Math.floor(i / 2) * 16;
    const lx = m.l + (i % 2) * 340;
    out.push(
      `<line x1="${lx}" y1="${ly - 4}" x2="${lx + 20}" y2="${ly - 4}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${lx + 26}" y="${ly}">${escapeXml(`${s.name} (n=${s.values.length})`)}</text>`,
    );
  });
  out.push(
    `<text x="14" y="${(H - m.b + m.t) / 2}" transform="rotate(-90 14 ${(H - m.b + m.t) / 2})" text-anchor="middle">fraction ≤ x</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}

/** What each section measures, how to read it, and its baseline. */
export const SECTIONS: Record<string, { title: string; read: string }> = {
  e2e: {
    title: 'End to end: serverless vs in-process',
    read: "Time from the API write (a source Secret data change; a Foo spec.replicas change) to the bench's own watch seeing every copy converged / the Deployment updated. Changes are sequential and go to `rotation` objects in turn, so each object changes again only after the relay's collapse window: isolated changes (bursts are the collapse section's). Serverless = relay → Pub/Sub emulator → functions-framework → API; baseline = the in-process mode (informers → workqueue → workers) on the same local API server. Ratio > 1: serverless is slower by that factor. The raw serverless figures are bounded below by the emulator's push loop, not by Levelset: emulator 0.8.20 runs two synchronous push loops per subscription that sleep 100 ms when nothing is pending, so a key published to an idle subscription waits for the next wake-up (docs/architecture.md decision 6; Cloud Pub/Sub pushes at once). Levelset's own time takes that wait out: for each serverless change, end to end minus the bus's wait of its first delivery, published (the emulator's publishTime of the key message, read from a pull subscription of the bench's own on the keys topic) → pushed (the `reconcile` outcome log line of that message id: its timestamp minus its duration, so the local push proxy's hop and functions-framework's parse, about a millisecond, count as the bus's); its p50 and p95 beside the in-process end to end's (targets from issue 34: p50 ≤ 1.5×, p95 ≤ 2.0×), and the bus's wait itself beside the serverless end to end. With `--push-model cloud`, the serverless path runs a second time with the local stack's `cloud` push model, its figures labelled modelled: the push proxies pull the keys' and the resync's subscriptions and push with a model of Cloud Pub/Sub's push window (local/push-window.ts: one push at first, one more per success, halved per failure, at most 64, into one function process's 8 request slots) and its push backoff, instead of the emulator's two push loops (docs/architecture.md decision 57).",
  },
  throughput: {
    title: 'Throughput: Foos created at once → all Ready',
    read: "Foos created together (50 concurrent creates), a simulated node making their Deployments available; time until every Foo is Ready=True, and reconciles run (outcome lines). Baseline: the in-process mode. Figures labelled modelled (`--push-model cloud`) ran the serverless path with the model of Cloud Pub/Sub's push window (local/push-window.ts), beside the in-process mode and beside the same run with the emulator's push.",
  },
  breakdown: {
    title: 'Where the serverless time and reconciles go (traces)',
    read: "A serverless local stack tracing every key to files (what `levelset trace` reads). Secret: isolated source Secret changes, each split by its trace (the relay's `enqueue` span of the patched resourceVersion, the Pub/Sub client's publish span, the function's `reconcile` span and its API calls) into segments from the API write to the bench's watch seeing every copy; baseline = the traced end-to-end median, so the ratio is each segment's share (medians do not add up exactly; the processes' clocks agree within a few ms, so a segment near 0 may read slightly negative). Only two segments are serverless's own, the rest (the watch, the reconcile's reads and writes) the in-process mode pays as well: the publish (the Pub/Sub client and the emulator, gRPC) and the push (the emulator's push loop, then the local push proxy, measured alone below, and functions-framework); on Google Cloud the push goes straight to Cloud Run, without the proxy. The publish has a baseline of its own: a bare `@google-cloud/pubsub` publish round trip (publishMessage → resolved) to the same emulator, on a topic subscribed as the keys topic is (an ordered push subscription, and a pull subscription read by a streaming subscriber, as the local stack's delivery watchdog reads the keys topic), one after each change converged, with the relay's client settings (ordering key, batching 1 message / 0 ms) and, beside it, the library's defaults; and the publish is split by its trace into the client's part (the Pub/Sub client's `create` span: the library and the emulator's Publish call) and Levelset's part (the relay's `enqueue` span less that one: the collapse, publish limit and encoding before it, and the handling of its answer after, so an upper bound; differences of span durations, which are exact, while span start times are whole milliseconds). Issue 34's target (p50 ≤ 2 ms) applies to the whole publish, or to Levelset's part when the bare round trip alone is above 2 ms (said in the target). Then the emulator's own push delivery, alone, against an endpoint answering in 20 ms: how many pushes it has in flight at once while a backlog waits (baseline: the function's request slots), the backlog's rate, and how long an isolated message waits from publish to push (published at a random phase; baseline: the HTTP hop alone). The emulator (0.8.20) runs two push loops per push subscription, each pulling one message and pushing it synchronously, and sleeping 100 ms when nothing is pending (its `PushLoop` class): locally at most two reconciles per subscription run at once, and a message published to an idle subscription waits for the next wake-up; Cloud Pub/Sub pushes at once and as concurrently as the endpoint keeps up. Foo: Foos created at once with a simulated node; each Foo reconcile is counted under the watch event that enqueued it and the collapse edge that published it (trailing: the key waited for the window's end); baseline = all Foo reconciles per Foo.",
  },
  collapse: {
    title: 'Collapse: leading + trailing edge vs trailing only',
    read: 'The relay alone against the API server and the Pub/Sub emulator. Isolated change: API write → Pub/Sub accepted the key message. Bursts: messages published. Baseline: the old trailing-only collapse (every key waits one window). Targets from the issue are checked.',
  },
  relay: {
    title: 'Relay: throughput on one core, memory of its cache',
    read: "Events/s: synthetic watch events through the key pipeline (map, collapse) on one Node thread, publishing to nowhere. Keys/s: distinct keys published to the Pub/Sub emulator. RSS: a child process holding a metadata-only informer of N ConfigMaps (≈256 B of data each, one label) vs a full-object informer (client-node makeInformer) of the same objects, after GC, both with the relay's deployed V8 flags (heap limit half its 512Mi memory limit, 4 MiB semi-spaces: terraform/kubernetes.tf, local/stack-services.ts RELAY_NODE_OPTIONS); growth = RSS after sync minus the same process idle; bytes per object = growth / N, and V8 heap used after GC / N (the cache alone); baseline = full object. Both children run as the relay's image runs the relay: bundled with its esbuild configuration (bench/informer-child.ts, cli/build/package-relay.ts), the metadata-only one beside relay/main.ts, and both first load what the relay process loads (its modules, the key publisher created), so idle = the relay before its informers start; the full-object baseline is bundled the same way in a build of its own (in the relay's, the client-node API it imports landed in the relay's chunks and the idle relay loaded it), so the comparison is of the informers alone. The idle relay and the 10k figure are also given beside the same child run from the TypeScript sources (every module file loaded, as before the relay was bundled).",
  },
  'api-cost': {
    title: 'API cost: requests per no-op reconcile',
    read: "API requests made by one reconcile of an already converged key (counted at the client). The replicator's cost must not grow with the number of namespaces; baseline = {baseline}. Then the writes the API server refused during the section's reconciles, by code (`levelset_rejected_writes_total` of the bench's process: 409 AlreadyExists or Conflict, 403 into a terminating namespace, 422 Invalid): work wasted, 0 expected here.",
  },
  admission: {
    title: 'Admission: what a policy adds to a create, what CEL rules add to a reconcile',
    read: "On the local API server (its own process): Deployment creates, one at a time, alternately in a namespace labelled `team`, where the Tenant example's team-limits ValidatingAdmissionPolicy evaluates its CEL (the Deployment passes it), and in a namespace its selector excludes (baseline: the policy is listed and matched, its CEL not run); the client's round trip. In process: the kit's check of the Tenant's spec against its CEL rules and list type (`specRuleViolations`, run by every reconcile's spec validation, functions/kit/cel.ts), per call, beside the zod parse of the same spec (baseline).",
  },
  cost: {
    title: 'What it costs: Cloud Run per million reconciles vs an always-on pod, per controller',
    read: "Each shipped controller's reconcile as the `reconcile` function runs it (`reconcileKey`), in a function process of its own (bench/child.ts `reconcile`: it loads what functions/index.ts loads, with Terraform's V8 heap limit; the API server and the Pub/Sub emulator in other processes): CPU time from that process's `process.cpuUsage()` around each reconcile, wall time, and its peak RSS from its own `resourceUsage().maxRSS` (baseline: the 512 MiB Cloud Run bills whatever is used). Converged = the object unchanged; baseline changing = the object merge-patched before each reconcile (outside the measured time), so the reconcile writes. Priced by bench/cost.ts (one price table, dated) on Terraform's defaults (1 vCPU, 512 MiB, concurrency 8): busy = an instance serving 8 keys at once, billed the larger of CPU time / vCPU and wall time / 8; isolated = each reconcile billed alone, rounded up to 100 ms. Beside it the in-process mode (`functions/runtime/in-process-main.ts`, every controller) idle: its informers synced and its workqueues drained (no key added for a second), then its CPU over 10 s and its RSS read from /proc, priced as a GKE Autopilot Pod (730 h a month, raised to Autopilot's minimum Pod); break-even = the pod's $/hour over the cost of one reconcile. docs/operations.md \"What it costs\" shows how to recompute them.",
  },
  resync: {
    title: 'Resync: enumerate and publish every key',
    read: "The resync function's resyncAll in a child process: paginated LIST of N ConfigMaps, one key message each to the Pub/Sub emulator, without ordering key and batched as the resync function publishes them (RESYNC_PUBLISHING); time and peak RSS (target: 100k keys in ≤ 15 s, peak ≤ 256 MiB, half Cloud Run's default 512 MiB). The child runs the TypeScript sources, not the deployed bundle. The child runs with the V8 flags Terraform gives the function (local/stack-services.ts FUNCTION_NODE_OPTIONS: `--max-old-space-size`, half the instance's memory, and 8 MiB semi-spaces): without a limit V8 on a large machine collects lazily and the RSS measures the machine, not the function; without the second it grows its young generation while the resync lists and publishes, and keeps the pages. Baseline: the smaller size (memory must not grow with the key count).",
  },
  'cold-start': {
    title: 'Cold start of the reconcile function',
    read: "From spawning functions-framework --target=reconcile to its first 204 (a valid key message for a missing object). Measured: the deployment package (`npm run package:functions`: the esbuild bundle, node_modules beside it, Terraform's NODE_OPTIONS with `--enable-source-maps`), and the TypeScript sources as `npm start` runs them. Baseline: an empty functions-framework function started the same way, interleaved with both.",
  },
  build: {
    title: '`levelset build` of a user project',
    read: "A copy of examples/foo outside the repository (its package.json and controllers, this checkout's package-lock.json and node_modules), built by `levelset build` in a process of its own, from spawn to exit: the manifests, the functions' package and the relay image's two bundles (three esbuild builds: the functions' beside the relay's two). Baseline: one bare esbuild call of the same project's functions entry, in the bench's process (esbuild's service already running), with the same target, format, minification and source maps but no plugins, no chunks and no map trimming: what one build costs this machine in this run. Target (issue 44): ≤ 5 s.",
  },
  'resync-priority': {
    title: 'Live changes during a resync',
    read: "Foo spec.replicas changed → the bench's watch sees the Deployment updated, through the serverless pipeline, while a resync's backlog is pending: on the resync's own topic and subscription (pushed at the local stack's resync push rate), and, as before this change, on the live keys topic. Baseline: the same changes with no resync running, measured in the same run just before the backlog is published. The backlog's keys name Foos that do not exist (one GET each); its size is in the figure's name. One run's p50 of a handful of changes swings with the machine's load (the backlog's reconciles, the emulator and the API server share 2 cores with the live change), so a full run makes several runs, each on a stack of its own, and reports the median run with every run's ratio in the figure's name.",
  },
  topic: {
    title: 'Topic controller: no-op cost and delete → gone',
    read: "Requests of a converged Topic's reconcile, to Kubernetes (counted by the KubeConfig; baseline: a Foo's) and to Pub/Sub (counted on the wire by an HTTP/2 proxy in front of the emulator; baseline: a Topic without subscription). Then, through the serverless pipeline, the time from a Topic's DELETE to the bench's watch seeing it gone (finalize deletes its subscription and topic, then the finalizer is removed), beside a Foo's (no finalizer) in the same stack.",
  },
  retries: {
    title: 'A failing key and the others: push backoff, 500 vs ack + requeue',
    read: "What one failing key costs every other key when Pub/Sub applies its push backoff (docs/architecture.md decision 40). Cloud Pub/Sub slows the pushes of a whole subscription after non-2xx answers (100 ms doubling up to 60 s); the emulator does not, so the local push proxy models it (`pushBackoff`). Each run: the emulator's ordered push subscription (Terraform's retry policy, 10 → 600 s) → the push proxy with push backoff → an endpoint answering in 20 ms, while one key is published 5 times a second (without ordering key, so that it can fail that often) and other keys one at a time, every 50-150 ms; figure: the other keys' publish → answered time, p50; baseline: the same with no failing key (idle). Before: the failing key's deliveries answered 500 (the reconcile function's former answer); after: answered 204, as `reconcile` now acknowledges a failure and requeues the key (its retries are more publishes of the key, as the 5/s here). The endpoint stands for the function's answers only. Keys still unanswered when a run gives up count with the time they waited (a lower bound, said in the figure's name). Target (issue 32): after ≤ 1.2× idle.",
  },
  webhooks: {
    title: 'Admission webhooks: a call warm and from cold, and what they add to a create',
    read: "examples/foo's two webhooks served by the `admission` function (functions-framework) behind an HTTPS front with the local CA, as `levelset dev` runs them (local/admission.ts), registered with the section's local API server. Cold start: from spawning the function's process to the first review it answers (module load, the registry, TLS; one sample); on Cloud Run the service keeps `admission_min_instances` (default 1) warm so the API server never meets it. Warm: sequential reviews POSTed to `/foo-scale` over HTTPS, p50 and p99; baseline: the kit's default `timeoutSeconds` (5 s), what the API server waits before the failure policy applies. Create: sequential Foo creates through the local API server, which calls `foo-defaults` then `foo-scale` on each (mutating, the write's checks as a dry run, validating, the write); baseline: the same creates before the webhooks were registered.",
  },
  tracing: {
    title: 'Tracing: on vs off',
    read: "In one process, a converged Foo's delivery (reconcileKey under its `reconcile` span: one GET, one LIST against the local API server), first with tracing off (the OpenTelemetry API's no-ops, what `LEVELSET_TRACING=off` runs: the baseline), then on with every span recorded and exported to an OTLP/JSON file (ratio 1). Ratio = on / off. The off figure's own baseline is the same reconcile without its `reconcile` span: what the no-op spans cost. Then the relay's key pipeline ingesting Foo events (20 per key, each key published twice: its leading edge, then its trailing edge with the rest collapsed; an `enqueue` span per publish, exported to a file), off, on at the default sample ratio (`LEVELSET_TRACE_SAMPLE_RATIO` 0.01: an `enqueue` span outside the ratio is not recorded at all, core/tracing-sdk.ts levelsetSampler) and on at ratio 1 (the worst case), each run in a process of its own with one setting for its life, as a relay has (bench/ingest-child.ts: its third run, after two to warm up), interleaved round by round, each the median of its rounds, in events per CPU-second of the process (user + system, every thread: the export and the garbage collector included; CPU time because a shared machine's load moves the wall time of a run by 2×); beside off, each setting's spread: its ratio to the off run of the same round, lowest to highest. Target (issue 44): on at the default ratio ≥ 0.8× off.",
  },
  peer: {
    title: 'Beside kubernetes/sample-controller on a real kube-apiserver',
    read: "Only with `--peer` and `--kubeconfig` (bench/sections/peer.ts): each contender alone on a real kube-apiserver with kube-controller-manager (no kubelet, no scheduler), in a namespace of its own, gone before the next starts: the peer binaries (sample-controller with client-go's default throttle of 5 requests/s, burst 10; and without a client-side throttle, as controller-runtime since v0.21: the baseline), then Levelset in-process and serverless, each running the foo controller only. N Foos created from one process (8 requests at once) → the bench's one watch sees every Deployment with the Foo's replicas; then every Foo's replicas patched → every Deployment updated. Requests per Foo from the API server's `apiserver_request_total` for foos and deployments, less the bench's own creates and patches: the controller's and kube-controller-manager's (the same for every contender). Rejected writes: answered 409, 403 or 422. CPU per Foo: the contender's processes (the peer; Levelset's relay and functions, or its in-process process; from /proc), the API server's (its `process_cpu_seconds_total`), and for the serverless contenders the Pub/Sub emulator's, a local stand-in of Cloud Pub/Sub (the local push proxies run in the bench's own process and are counted nowhere; the local stack's delivery watchdog, which reads every key a second time through a subscription of its own, does not run, as on Google Cloud): on 2 cores every process shares the machine, so CPU tells where the time goes. Ratio > 1: slower, or more requests or CPU, than the baseline. The serverless figures are bounded by the Pub/Sub emulator's push loop (2 pushes in flight per subscription), not Cloud Pub/Sub's; with `--push-model cloud` one more contender, `levelset serverless (modelled push)`, pushes with a model of Cloud Pub/Sub's push window instead (local/push-window.ts), its figures modelled.",
  },
  fleet: {
    title: 'Fleet: one deployment serving two clusters vs one deployment per cluster',
    read: "Two local API servers, each with a simulated node; N Foos created at once in each cluster → all Ready, through the serverless pipeline. Fleet: one local stack whose `reconcile` function process serves both clusters (`LEVELSET_CLUSTERS` lists both, one relay per cluster). Baseline: two stacks side by side, each a `reconcile` process serving one cluster (also `LEVELSET_CLUSTERS`, one entry), each with its own emulator, as two deployments have. RSS = the sum over the function processes (`reconcile` and `resync`; then the `reconcile` processes alone) of each one's peak RSS (VmHWM in /proc, read after the workload; also the RSS then); reconciles/s = Foo reconcile outcome lines of those processes over the time from the first create to every Foo Ready in both clusters. Ratio < 1 for RSS: the fleet's saving.",
  },
};

/**
 * "A push through Cloud Pub/Sub", shown under the breakdown table beside the emulator's isolated
 * publish → push median measured in the run (`emulatorMs`, ms). An estimate from Pub/Sub's
 * documentation, not a measurement: the project ships no link outside the repository, so its
 * sources are named in words.
 */
export function cloudPushEstimate(emulatorMs: number | undefined): string {
  const measured =
    emulatorMs === undefined
      ? "The emulator's own figure was not measured in this run."
      : `The emulator measured ${round(emulatorMs)} ms here (isolated message, publish accepted → pushed, median).`;
  return [
    `**A push through Cloud Pub/Sub (estimated, not measured).** ${measured}`,
    "What the bus adds in the cloud, from Pub/Sub's documentation: its push subscriptions guide says the Pub/Sub server sends each message as an HTTPS request to the endpoint and adjusts the rate of push requests to the rate of successful answers, so there is no idle sleep between a publish and its push such as the emulator's 100 ms; its guide to troubleshooting a topic separates publish latency from end-to-end delivery latency and warns that a topic with little traffic may take longer to initialise its resources; the guide to monitoring push subscriptions names the metrics that measure the wait (the subscription's push request latencies and delivery latency health score). Neither Google's documentation nor any published benchmark we could check gives a figure for publish → push on a push subscription, so none is quoted here.",
    "Estimate: a quiet key's wait in the cloud is Pub/Sub's internal hand-off plus one HTTPS request within the region, without the emulator's 0–100 ms wake-up spread; we expect it at or below the emulator's median here and its spread far narrower, but it is an expectation. To know it, read the published → pushed segment of a key traced on a deployed stack (the breakdown above, on Google Cloud), or the subscription's push request latencies in Cloud Monitoring.",
  ].join('\n\n');
}

/** The cost section's per-controller summary: one row per controller. */
export function costTable(rows: readonly CostRow[]): string {
  const out = [
    '| controller | CPU ms / reconcile (converged, changing) | wall ms | billed ms (busy, isolated) | $ per million (busy, isolated) | $ per million changing (busy, isolated) | break-even reconciles/hour (isolated, busy) | peak RSS MiB |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows)
    out.push(
      `| ${r.controller} | ${r.cpuMs.converged}, ${r.cpuMs.changing} | ${r.wallMs.converged}, ${r.wallMs.changing} | ${r.billedMs.busy}, ${r.billedMs.isolated} | ${r.perMillion.convergedBusy}, ${r.perMillion.convergedIsolated} | ${r.perMillion.changingBusy}, ${r.perMillion.changingIsolated} | ${r.breakEvenPerHour.isolated}, ${r.breakEvenPerHour.busy} | ${r.peakRssMib} |`,
    );
  return out.join('\n');
}

/** What a run measured, as results.json holds it. */
export interface BenchResults {
  generatedAt: string;
  tiny: boolean;
  /** The whole run's wall time, ms. */
  durationMs: number;
  /** Each section that ran, in order, with its wall time (ms). */
  sectionMs: Record<string, number>;
  machine: Record<string, string | number>;
  sizes: Record<string, number | number[]>;
  notes: string[];
  figures: Figure[];
  /** The cost section's per-controller table. */
  cost: CostRow[];
  /** The fleet section's two configurations. */
  fleet: Record<string, unknown> | undefined;
}

/**
 * The Markdown report of `run`: machine, then one table per section (the cost section's with its
 * per-controller summary, the breakdown's with the Cloud Pub/Sub estimate), the chart (`chartFile`),
 * and how to reproduce.
 */
export function markdownReport(run: BenchResults, chartFile: string): string {
  const { figures } = run;
  const under: Record<string, string> = {
    ...(run.cost.length ? { cost: costTable(run.cost) } : {}),
    breakdown: cloudPushEstimate(
      figures.find((f) => /emulator push subscription: isolated message/.test(f.name))?.value,
    ),
  };
  const lines: string[] = [
    '# Levelset benchmark',
    '',
    `Generated by \`npm run bench${run.tiny ? ' -- --tiny' : ''}\` in ${Math.round(run.durationMs / 1000)} s. Every figure is measured in this run, with its baseline from the same run; **ratio** = value / baseline.`,
    '',
    `Sections (\`--only\` names), wall time: ${Object.entries(run.sectionMs)
      .map(([name, ms]) => `${name} ${Math.round(ms / 1000)} s`)
      .join(', ')}.`,
    '',
    '## Machine',
    '',
    ...Object.entries(run.machine).map(([k, v]) => `- ${k}: ${v}`),
    `- sizes: ${Object.entries(run.sizes)
      .filter(([, v]) => typeof v === 'number')
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
    '',
  ];
  if (run.notes.length) lines.push('## Notes', '', ...run.notes.map((n) => `- ${n}`), '');
  // One table per section, each figure once (a summary table repeated every row).
  for (const [id, s] of Object.entries(SECTIONS)) {
    const fs = figures.filter((f) => f.section === id);
    lines.push(`## ${s.title}`, '', readText(s.read, fs), '');
    if (id === 'e2e') lines.push(`![Latency distributions (CDF)](${chartFile})`, '');
    lines.push(fs.length ? table(fs) : '_not measured in this run_', '');
    if (fs.length && under[id]) lines.push(under[id], '');
  }
  lines.push(
    '## Reproduce',
    '',
    '```sh',
    'npm ci',
    'npm run bench            # full sizes; writes bench/results.json, bench/report.md, bench/latency.svg',
    'npm run bench -- --tiny  # tiny sizes into a temp dir (what npm run test:load runs once)',
    'npm run bench -- --only collapse  # one section into a temp dir: e2e/throughput, breakdown, collapse, relay, api-cost, cost, memory/resync, cold-start, admission, webhooks, build, resync-priority, retries, topic, tracing, fleet; peer with --peer NAME=PATH --kubeconfig PATH',
    '```',
    '',
    'It starts its own local API server (apiserver), Pub/Sub emulator (Google Cloud SDK) and functions-framework processes; nothing else is needed. Figures depend on the machine and its load: compare ratios, not absolute values, across machines.',
    '',
  );
  return lines.join('\n');
}

/**
 * A section's text with `{baseline}` replaced by the baseline its figures were measured against in
 * this run (e.g. `2 namespaces` in a tiny run, `10 namespaces` in a full one).
 */
function readText(read: string, figures: readonly Figure[]): string {
  const baseline = figures.find((f) => f.baseline)?.baseline?.name;
  return read.replaceAll('{baseline}', baseline ?? 'the smallest size measured');
}

const withUnit = (v: number, unit: string) => `${round(v)} ${unit}`;

/** A section's Markdown table of figures. */
export function table(figures: readonly Figure[]): string {
  const rows = ['| figure | value | baseline | ratio | target |', '| --- | ---: | ---: | ---: | --- |'];
  for (const f of figures) {
    const base = f.baseline ? `${withUnit(f.baseline.value, f.unit)} (${f.baseline.name})` : '—';
    const target = f.target ? `${f.target.text} ${f.target.met ? '✅' : '❌'}` : '';
    rows.push(`| ${f.name} | ${withUnit(f.value, f.unit)} | ${base} | ${ratio(f)} | ${target} |`);
  }
  return rows.join('\n');
}
