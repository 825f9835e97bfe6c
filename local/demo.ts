/**
 * The demo `npm start` plays in the embedded cluster: a source Secret, a few namespaces, then
 * live changes (a new namespace, an update of the source) so that each step of the replication
 * shows, with a check of the result after each.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '../test/support/wait.ts';

const SECRET = 'demo-credentials';
const encode = (s: string) => Buffer.from(s).toString('base64');

async function ensureNamespace(core: CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } }).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });
}

async function copiesIn(core: CoreV1Api, namespaces: string[], version: string): Promise<boolean> {
  const copies = await Promise.all(
    namespaces.map((namespace) =>
      core.readNamespacedSecret({ namespace, name: SECRET }).catch(() => undefined),
    ),
  );
  return copies.every((c) => c?.data?.version === encode(version));
}

/**
 * `before`: namespaces and the source Secret, made before the relay starts (its initial list finds
 * them). `after`: live changes, each followed by a check printed through `say`.
 * @throws when a step does not converge within 30 s.
 */
export async function seedDemo(
  kubeConfig: KubeConfig,
  sourceNamespace: string,
  phase: 'before' | 'after',
  say: (line: string) => void = () => {},
): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  if (phase === 'before') {
    for (const ns of [sourceNamespace, 'team-a', 'team-b']) await ensureNamespace(core, ns);
    await core
      .createNamespacedSecret({
        namespace: sourceNamespace,
        body: {
          metadata: { name: SECRET, labels: { app: 'demo' } },
          type: 'Opaque',
          data: { username: encode('demo'), password: encode('change-me'), version: encode('1') },
        },
      })
      .catch((err: { code?: number }) => {
        if (err.code !== 409) throw err;
      });
    return;
  }
  const step = async (what: string, namespaces: string[], version: string) => {
    const started = Date.now();
    await waitFor(() => copiesIn(core, namespaces, version), { timeoutMs: 30_000, message: what });
    say(`demo        ✓ ${what} (${Date.now() - started} ms)`);
  };
  say(`demo        source Secret ${sourceNamespace}/${SECRET} exists; namespaces team-a, team-b`);
  await step(`${SECRET} v1 copied into team-a, team-b`, ['team-a', 'team-b'], '1');
  say('demo        creating namespace team-c');
  await ensureNamespace(core, 'team-c');
  await step(`${SECRET} copied into the new namespace team-c`, ['team-c'], '1');
  say(`demo        updating ${sourceNamespace}/${SECRET} to v2`);
  const source = await core.readNamespacedSecret({ namespace: sourceNamespace, name: SECRET });
  source.data = { ...source.data, version: encode('2') };
  await core.replaceNamespacedSecret({ namespace: sourceNamespace, name: SECRET, body: source });
  await step(`${SECRET} v2 reached every copy`, ['team-a', 'team-b', 'team-c'], '2');
  say('demo        done; the pipeline keeps running. Try:');
  say(`              kubectl --kubeconfig .levelset/kubeconfig create namespace team-d`);
  say(`              kubectl --kubeconfig .levelset/kubeconfig get secrets -A -l levelset.dev/replica-of`);
}
