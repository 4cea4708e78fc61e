// The testkit's FakeOpenAI as a server for end-to-end tests of a deployment (the
// `troupe-fake-openai` image: deploy/docker/build.sh --fake-openai). Never part of a real cluster.
//
// Environment:
//   FAKE_OPENAI_SCRIPT   JSON file: {"rules": [{"name", "match", "steps": [reply, ...]}, ...]}.
//                        A chat request takes the first rule whose `match` (a regular expression)
//                        matches its messages (as JSON), and that rule's step N, where N is the
//                        number of assistant messages in the request (the last step once past
//                        the end). A reply is a testkit ScriptedResponse (content, toolCalls,
//                        usage, delayMs, ...). Stateless per request: a retried attempt replays
//                        the same conversation. A request no rule matches fails loudly (HTTP 500).
//   FAKE_OPENAI_API_KEY  requests must carry this bearer key (else 401): proves keys arrive.
//   FAKE_OPENAI_PORT     @default 8080 (all interfaces)
//   FAKE_OPENAI_MODELS   comma-separated model ids for GET /v1/models. @default fake-model
// Prints one JSON line per event on stdout (the request log end-to-end tests read with `docker
// logs`): {"fake":"request",...} for every request, {"fake":"reply","rule","step"} for every
// chat request answered, {"fake":"unexpected",...} for every request the script did not cover.
// Writes /tmp/fake-openai.ready once listening (the image's health check).
'use strict';
const { readFileSync, writeFileSync, rmSync } = require('node:fs');
const { FakeOpenAI } = require('@troupe/testkit');

const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const script = JSON.parse(readFileSync(required('FAKE_OPENAI_SCRIPT'), 'utf8'));
const rules = (script.rules ?? []).map((r) => ({ ...r, re: new RegExp(r.match) }));
if (rules.length === 0 || rules.some((r) => !Array.isArray(r.steps) || r.steps.length === 0)) {
  throw new Error('FAKE_OPENAI_SCRIPT: needs rules, each with a non-empty steps list');
}

function required(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} must be set`);
  return v;
}

const logger = {
  debug: (fields, msg) => msg === 'request' && print({ fake: 'request', ...fields }),
  info: () => undefined,
  warn: (fields) => print({ fake: 'unexpected', ...fields }),
  error: (fields) => print({ fake: 'error', err: String(fields?.err) }),
};

const fake = new FakeOpenAI({
  apiKey: required('FAKE_OPENAI_API_KEY'),
  host: '0.0.0.0',
  port: Number(process.env.FAKE_OPENAI_PORT ?? 8080),
  models: (process.env.FAKE_OPENAI_MODELS ?? 'fake-model').split(','),
  logger,
});
fake.setHandler((req) => {
  const messages = req.body.messages;
  const text = JSON.stringify(messages);
  const rule = rules.find((r) => r.re.test(text));
  if (!rule) return undefined; // the fake answers 500 and logs it as unexpected
  const step = messages.filter((m) => m.role === 'assistant').length;
  print({ fake: 'reply', index: fake.requests.length - 1, rule: rule.name, step });
  return rule.steps[Math.min(step, rule.steps.length - 1)];
});

const READY = '/tmp/fake-openai.ready';
fake.start().then(
  () => {
    writeFileSync(READY, String(fake.port));
    print({ fake: 'listening', port: fake.port });
  },
  (err) => {
    process.stderr.write(`fake-openai: ${err.stack ?? err}\n`);
    process.exit(1);
  },
);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    rmSync(READY, { force: true });
    void fake.close().then(() => process.exit(0));
  });
}
