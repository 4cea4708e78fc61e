import { execFileSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';

// Offline validation of deploy/k8s: every manifest file and every kustomize build (base and the
// overlays, built with `kubectl kustomize` when kubectl is installed) against the Kubernetes
// schemas of kubernetes-models 4.5.1 (types, enums, required fields), plus a strict check for
// unknown fields, which those validators do not reject: the object is wrapped in a proxy that
// records every property the validator reads, and a property it never read is not in the schema.

const K8S = path.resolve(__dirname, '../../k8s');
const COMPOSE_NATS_ROLES = path.resolve(__dirname, '../../compose/nats-roles.conf');
const requireModel = createRequire(__filename);
// The schema validators are not in the package's `exports`: load them by file path.
const SCHEMAS = path.join(path.dirname(requireModel.resolve('kubernetes-models')), '_schemas');

type Obj = Record<string, unknown>;
interface Validator {
  (data: unknown): boolean;
  errors?: { instancePath: string; message?: string; params?: unknown }[] | null;
}

/** The kubernetes-models schema validator of an apiVersion/kind (`IoK8sApiAppsV1Deployment`). */
function validatorOf(apiVersion: string, kind: string): Validator {
  const [group, version] = apiVersion.includes('/')
    ? [apiVersion.split('/')[0]!, apiVersion.split('/')[1]!]
    : ['core', apiVersion];
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  const name = `IoK8sApi${cap(group.split('.')[0]!)}${cap(version)}${kind}`;
  const mod = requireModel(path.join(SCHEMAS, `${name}.js`)) as { validate: Validator };
  return mod.validate;
}

/** Runs `validate` on a recording proxy of `doc`; returns schema errors and unknown fields. */
function check(doc: Obj): string[] {
  const read = new WeakMap<object, Set<string>>();
  const proxies = new WeakMap<object, object>();
  const wrap = (target: object): object => {
    let p = proxies.get(target);
    if (!p) {
      read.set(target, new Set());
      p = new Proxy(target, {
        get(t, key, receiver) {
          if (typeof key === 'string') read.get(t)!.add(key);
          const v: unknown = Reflect.get(t, key, receiver);
          return v !== null && typeof v === 'object' ? wrap(v) : v;
        },
      });
      proxies.set(target, p);
    }
    return p;
  };
  const name = `${String(doc['kind'])}/${String((doc['metadata'] as Obj | undefined)?.['name'])}`;
  let validate: Validator;
  try {
    validate = validatorOf(String(doc['apiVersion']), String(doc['kind']));
  } catch {
    return [
      `${name}: no Kubernetes schema for ${String(doc['apiVersion'])} ${String(doc['kind'])}`,
    ];
  }
  const problems: string[] = [];
  if (!validate(wrap(doc))) {
    for (const e of validate.errors ?? []) {
      problems.push(
        `${name}: ${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
      );
    }
  }
  const walk = (value: unknown, at: string): void => {
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${at}/${i}`));
    else if (value !== null && typeof value === 'object') {
      const seen = read.get(value);
      for (const [k, v] of Object.entries(value)) {
        if (!seen?.has(k)) problems.push(`${name}: unknown field ${at}/${k}`);
        else walk(v, `${at}/${k}`);
      }
    }
  };
  walk(doc, '');
  return problems;
}

function docs(text: string, source: string): Obj[] {
  return parseAllDocuments(text).flatMap((d): Obj[] => {
    if (d.errors.length > 0) throw new Error(`${source}: ${d.errors[0]!.message}`);
    const v = d.toJS() as Obj | null;
    return v && typeof v === 'object' ? [v] : [];
  });
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return yamlFiles(p);
    return /\.ya?ml$/.test(f) ? [p] : [];
  });
}

/** The `authorization { ... }` block of a nats.conf text (indentation removed). */
function authBlock(conf: string): string {
  const at = conf.indexOf('authorization {');
  if (at < 0) throw new Error('no authorization block');
  return conf
    .slice(at)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join('\n');
}

function kubectl(): boolean {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

/** Builds a kustomization of a copy of deploy/k8s (with a generated secrets.env). */
function build(dir: string): Obj[] {
  const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  const built = docs(out, dir);
  // kustomize folds a long Secret value's base64 over lines; the API server's decoder skips the
  // line breaks, the schema's `byte` format does not.
  for (const d of built) {
    if (d['kind'] !== 'Secret' || !d['data']) continue;
    const data = d['data'] as Record<string, string>;
    for (const k of Object.keys(data)) data[k] = data[k]!.replace(/\s+/g, '');
  }
  return built;
}

test('the strict check catches unknown fields, wrong types, bad enums and missing fields', () => {
  const deployment = (over: Obj): Obj => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', labels: { any: 'label' } },
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: {
        metadata: { labels: { a: 'b' } },
        spec: { containers: [{ name: 'c', image: 'i', ...over }] },
      },
    },
  });
  expect(check(deployment({}))).toEqual([]);
  expect(check(deployment({ imagePullPolicy: 'Sometimes' })).join()).toMatch(/imagePullPolicy/);
  expect(check(deployment({ ports: [{ containerPort: 'eighty' }] })).join()).toMatch(/ports\/0/);
  expect(check(deployment({ resource: { limits: { cpu: '1' } } }))).toEqual([
    'Deployment/x: unknown field /spec/template/spec/containers/0/resource',
  ]);
  const noSelector = deployment({});
  delete (noSelector['spec'] as Obj)['selector'];
  expect(check(noSelector).join()).toMatch(/selector/);
});

/** The files a folder's kustomization.yaml applies as patches (`patches: [{path}]`). */
function patchFiles(dir: string): Set<string> {
  let text: string;
  try {
    text = readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8');
  } catch {
    return new Set();
  }
  const [k] = docs(text, 'kustomization.yaml');
  const patches = (k?.['patches'] as Obj[] | undefined) ?? [];
  return new Set(patches.flatMap((p) => (typeof p['path'] === 'string' ? [p['path']] : [])));
}

test('every manifest file in deploy/k8s matches the Kubernetes schemas, unknown fields included', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const file of yamlFiles(K8S)) {
    for (const doc of docs(readFileSync(file, 'utf8'), file)) {
      // Kustomizations and partial patches are not API objects.
      if (String(doc['apiVersion']).startsWith('kustomize.config.k8s.io')) continue;
      if (file.includes(`${path.sep}overlays${path.sep}`) && !doc['data'] && !doc['spec']) continue;
      // Strategic-merge patches an overlay's kustomization names are partial objects.
      if (patchFiles(path.dirname(file)).has(path.basename(file))) continue;
      checked++;
      problems.push(...check(doc).map((p) => `${path.relative(K8S, file)}: ${p}`));
    }
  }
  expect(problems).toEqual([]);
  expect(checked).toBeGreaterThanOrEqual(15);
});

test('the NATS roles are the same in compose and Kubernetes; the users come from their Secret', () => {
  // compose/nats-roles.conf, verbatim (comments included), is the base ConfigMap's
  // nats-roles.conf; every nats.conf takes its users (and, through them, the roles) from the
  // troupe-nats-users Secret that gen-secrets.sh generates.
  const [base] = docs(readFileSync(path.join(K8S, 'base/nats-config.yaml'), 'utf8'), 'base');
  const data = base!['data'] as Obj;
  expect(data['nats-roles.conf']).toBe(readFileSync(COMPOSE_NATS_ROLES, 'utf8'));
  for (const file of ['base/nats-config.yaml', 'overlays/dev/nats-config.yaml']) {
    const [cm] = docs(readFileSync(path.join(K8S, file), 'utf8'), file);
    const conf = String((cm!['data'] as Obj)['nats.conf']);
    expect(authBlock(conf)).toBe('authorization {\ninclude ../users/nats-users.conf\n}');
  }
});

const haveKubectl = kubectl();
(haveKubectl ? test : test.skip)(
  'kustomize builds of base, dev, dind, vm, kvm and models validate and keep the security settings',
  () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-k8s-'));
    cpSync(K8S, dir, { recursive: true });
    execFileSync('bash', [path.join(dir, 'gen-secrets.sh'), '--force'], { stdio: 'ignore' });
    for (const overlay of [
      'base',
      'overlays/dev',
      'overlays/dind',
      'overlays/vm',
      'overlays/kvm',
      'overlays/models',
    ]) {
      const built = build(path.join(dir, overlay));
      const problems = built.flatMap((d) => check(d).map((p) => `${overlay}: ${p}`));
      expect(problems).toEqual([]);
      const kinds = built.map((d) => d['kind']);
      for (const k of ['StatefulSet', 'Deployment', 'DaemonSet', 'Secret', 'NetworkPolicy']) {
        expect(kinds).toContain(k);
      }
      expect(kinds.filter((k) => k === 'PodDisruptionBudget').length).toBeGreaterThanOrEqual(2);
      const secret = built.find(
        (d) =>
          d['kind'] === 'Secret' &&
          String((d['metadata'] as Obj)['name']).startsWith('troupe-secrets'),
      )!;
      const secretName = (secret['metadata'] as Obj)['name'];
      const secretKeys = Object.keys(secret['data'] as Obj);
      for (const d of built) {
        expect((d['metadata'] as Obj)['namespace'] ?? 'troupe').toBe('troupe');
        const pod = ((d['spec'] as Obj | undefined)?.['template'] as Obj | undefined)?.['spec'] as
          Obj | undefined;
        if (!pod) continue;
        expect(pod['automountServiceAccountToken']).toBe(false);
        for (const c of pod['containers'] as Obj[]) {
          const where = `${overlay} ${String(d['kind'])} ${String(c['name'])}`;
          const res = c['resources'] as Obj | undefined;
          expect([where, Boolean(res?.['requests'] && res?.['limits'])]).toEqual([where, true]);
          expect([where, Boolean(c['readinessProbe'])]).toEqual([where, true]);
          const sc = c['securityContext'] as Obj | undefined;
          if (c['name'] !== 'dind') {
            expect([where, sc?.['allowPrivilegeEscalation']]).toEqual([where, false]);
            expect([where, (sc?.['capabilities'] as Obj | undefined)?.['drop']]).toEqual([
              where,
              ['ALL'],
            ]);
          }
          for (const e of (c['env'] as Obj[] | undefined) ?? []) {
            const ref = (e['valueFrom'] as Obj | undefined)?.['secretKeyRef'] as Obj | undefined;
            if (!ref) continue;
            expect(ref['name']).toBe(secretName);
            expect(secretKeys).toContain(ref['key']);
          }
        }
      }
    }
    // The vm overlays: node agents with QEMU, the node's guest images read-only, and (kvm)
    // /dev/kvm from a device plugin on the nodes labelled for it.
    const agentOf = (overlay: string): Obj => {
      const ds = build(path.join(dir, overlay)).find((d) => d['kind'] === 'DaemonSet')!;
      return ((ds['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
    };
    // The host id is the node's name as the agent cleans it (TROUPE_NODE_NAME): TROUPE_HOST_ID
    // is taken as is, and a node name with dots (EKS's) would fail the agent at start.
    const baseAgent = (agentOf('base')['containers'] as Obj[]).find(
      (x) => x['name'] === 'node-agent',
    )!;
    expect(baseAgent['env']).toContainEqual({
      name: 'TROUPE_NODE_NAME',
      valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } },
    });
    expect((baseAgent['env'] as Obj[]).map((e) => e['name'])).not.toContain('TROUPE_HOST_ID');
    for (const overlay of ['overlays/vm', 'overlays/kvm']) {
      const pod = agentOf(overlay);
      const c = (pod['containers'] as Obj[]).find((x) => x['name'] === 'node-agent')!;
      expect(c['image']).toBe('troupe-node-agent-vm:latest');
      expect(c['env']).toContainEqual({ name: 'TROUPE_VM', value: 'on' });
      expect(c['volumeMounts']).toContainEqual({
        name: 'vm-images',
        mountPath: '/var/lib/troupe/vm-images',
        readOnly: true,
      });
      // The socket mount of the base stays: desktops and sandboxes still run on Docker.
      expect((c['volumeMounts'] as Obj[]).map((m) => m['name'])).toContain('docker-socket');
    }
    // The models overlay: the models ConfigMap read-only and the keys Secret in the coordinators
    // and agent hosts only; agent hosts are NATS clients with egress to NATS, DNS and HTTPS only.
    const models = build(path.join(dir, 'overlays/models'));
    const named = (kind: string, prefix: string): Obj =>
      models.find(
        (d) => d['kind'] === kind && String((d['metadata'] as Obj)['name']).startsWith(prefix),
      )!;
    const keysName = (named('Secret', 'troupe-model-keys')['metadata'] as Obj)['name'];
    const modelsName = (named('ConfigMap', 'troupe-models')['metadata'] as Obj)['name'];
    const podOf = (d: Obj): Obj => ((d['spec'] as Obj)['template'] as Obj)['spec'] as Obj;
    const withKeys: string[] = [];
    for (const d of models) {
      if (!['Deployment', 'DaemonSet', 'StatefulSet'].includes(String(d['kind']))) continue;
      const name = String((d['metadata'] as Obj)['name']);
      for (const c of podOf(d)['containers'] as Obj[]) {
        const refs = ((c['envFrom'] as Obj[] | undefined) ?? []).map(
          (e) => (e['secretRef'] as Obj | undefined)?.['name'],
        );
        if (refs.includes(keysName)) withKeys.push(name);
      }
    }
    expect(withKeys.sort()).toEqual(['troupe-agent-host', 'troupe-coordinator']);
    for (const name of ['troupe-agent-host', 'troupe-coordinator']) {
      const pod = podOf(named('Deployment', name));
      expect(pod['volumes']).toContainEqual({ name: 'models', configMap: { name: modelsName } });
      const c = (pod['containers'] as Obj[])[0]!;
      expect(c['volumeMounts']).toContainEqual({
        name: 'models',
        mountPath: '/etc/troupe',
        readOnly: true,
      });
      expect(c['env']).toContainEqual({
        name: 'TROUPE_MODELS_FILE',
        value: '/etc/troupe/models.yaml',
      });
    }
    const host = (podOf(named('Deployment', 'troupe-agent-host'))['containers'] as Obj[])[0]!;
    expect(host['command']).toEqual(['node', '/opt/troupe/client/dist/cli/main.js', 'agent-host']);
    const natsIngress = named('NetworkPolicy', 'troupe-nats')['spec'] as Obj;
    expect(JSON.stringify(natsIngress['ingress'])).toContain('troupe-agent-host');
    const egress = named('NetworkPolicy', 'troupe-agent-host')['spec'] as Obj;
    expect(egress['policyTypes']).toEqual(['Ingress', 'Egress']);
    expect(egress['ingress']).toBeUndefined();
    const ports = (egress['egress'] as Obj[]).flatMap((r) =>
      (r['ports'] as Obj[]).map((p) => p['port']),
    );
    expect([...new Set(ports)].sort()).toEqual([4222, 443, 53]);

    const kvm = agentOf('overlays/kvm');
    expect(kvm['nodeSelector']).toEqual({ 'troupe.dev/kvm': 'true' });
    const kvmAgent = (kvm['containers'] as Obj[]).find((x) => x['name'] === 'node-agent')!;
    expect(((kvmAgent['resources'] as Obj)['limits'] as Obj)['devices.kubevirt.io/kvm']).toBe('1');
    expect(agentOf('overlays/vm')['nodeSelector']).toBeUndefined();
  },
);

(haveKubectl ? test : test.skip)(
  'components/per-node-nats gives each node agent its own NATS user and password file',
  () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-k8s-'));
    cpSync(K8S, dir, { recursive: true });
    rmSync(path.join(dir, 'node-credentials'), { recursive: true, force: true });
    execFileSync(
      'bash',
      [path.join(dir, 'gen-secrets.sh'), '--force', '--nodes', 'ip-10-0-1-2.ec2.internal,node-b'],
      { stdio: 'ignore' },
    );
    // The component on top of an overlay, as docs/deploy.md says to use it.
    for (const overlay of ['dev', 'models']) {
      const combined = path.join(dir, 'overlays', `${overlay}-per-node`);
      mkdirSync(combined);
      writeFileSync(
        path.join(combined, 'kustomization.yaml'),
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          `resources: [../${overlay}]`,
          'components: [../../components/per-node-nats]',
          '',
        ].join('\n'),
      );
      const built = build(combined);
      expect(built.flatMap((d) => check(d))).toEqual([]);
      const secret = (prefix: string): Obj =>
        built.find(
          (d) =>
            d['kind'] === 'Secret' && String((d['metadata'] as Obj)['name']).startsWith(prefix),
        )!;
      // No shared node agent password anywhere.
      expect(Object.keys(secret('troupe-secrets')['data'] as Obj)).not.toContain(
        'nats-node-agent-password',
      );
      const users = Buffer.from(
        String((secret('troupe-nats-users')['data'] as Obj)['nats-users.conf']),
        'base64',
      ).toString();
      expect(users).toContain('user: "node-agent.ip-10-0-1-2.ec2.internal"');
      expect(users).toContain('"troupe.troupe.host.ip-10-0-1-2-ec2-internal.*"');
      expect(users).toContain('user: "node-agent.node-b"');
      expect(users).not.toMatch(/user: node-agent,|NODE_AGENT_SHARED/);
      const ds = built.find((d) => d['kind'] === 'DaemonSet')!;
      const pod = (ds['spec'] as Obj)['template'] as Obj;
      const c = ((pod['spec'] as Obj)['containers'] as Obj[]).find(
        (x) => x['name'] === 'node-agent',
      )!;
      const env = c['env'] as Obj[];
      const names = env.map((e) => e['name']);
      // The user is named after the node, which Kubernetes expands only when defined above it.
      expect(names.indexOf('TROUPE_NODE_NAME')).toBeLessThan(names.indexOf('TROUPE_NATS_USER'));
      expect(env).toContainEqual({
        name: 'TROUPE_NATS_USER',
        value: 'node-agent.$(TROUPE_NODE_NAME)',
      });
      expect(names).not.toContain('TROUPE_NATS_PASS');
      expect(env).toContainEqual({
        name: 'TROUPE_NATS_PASS_FILE',
        value: '/etc/troupe-node/nats-password',
      });
      expect(c['volumeMounts']).toContainEqual({
        name: 'node-credentials',
        mountPath: '/etc/troupe-node',
        readOnly: true,
      });
      expect((pod['spec'] as Obj)['volumes']).toContainEqual({
        name: 'node-credentials',
        hostPath: { path: '/etc/troupe/node-agent', type: 'Directory' },
      });
      // Only the NATS pods mount the users file.
      const mounting = built
        .filter((d) => JSON.stringify(d).includes('"secretName":"troupe-nats-users'))
        .map((d) => String((d['metadata'] as Obj)['name']));
      expect(mounting).toEqual(['troupe-nats']);
    }
    for (const node of ['ip-10-0-1-2.ec2.internal', 'node-b']) {
      const file = path.join(dir, 'node-credentials', node, 'nats-password');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toMatch(/^tr[0-9a-f]{48}\n$/);
    }
  },
);
