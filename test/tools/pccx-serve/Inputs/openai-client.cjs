// OpenAI's own Node.js client against pccx-serve: usage: node
// openai-client.cjs NODE_DIR (the server's base URL in $PCCX_URL).
const path = require('path');
const mod = require(path.join(process.argv[2], 'node_modules', 'openai'));
const OpenAI = mod.OpenAI || mod.default || mod;

const client = new OpenAI({
  baseURL: process.env.PCCX_URL + '/v1',
  apiKey: 'not-needed', // the server runs with --api-key not-needed
  timeout: 30000,
  maxRetries: 0,
});

async function expectError(what, call) {
  try {
    await call();
    console.log(`${what}: no error`);
  } catch (e) {
    const body = e.error || {};
    console.log(`${what}: status ${e.status} code ${body.code} param ${body.param} type ${body.type}: ${body.message}`);
  }
}

async function main() {
  const models = await client.models.list();
  console.log('models:', models.data.map((m) => m.id).join(','));

  const completion = await client.completions.create({
    model: 'tiny', prompt: 'Hello there', max_tokens: 5, temperature: 0,
  });
  console.log('completion: object', completion.object, 'finish', completion.choices[0].finish_reason,
              'completion_tokens', completion.usage.completion_tokens);

  const request = {
    model: 'tiny',
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }],
    max_tokens: 6, temperature: 0,
  };
  const whole = await client.chat.completions.create(request);
  console.log('chat: role', whole.choices[0].message.role, 'finish', whole.choices[0].finish_reason);

  const stream = await client.chat.completions.create({ ...request, stream: true });
  let text = '', chunks = 0, finish = null, role = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (choice.delta.role) role = choice.delta.role;
    if (choice.delta.content) { text += choice.delta.content; ++chunks; }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  console.log('stream: role', role, 'finish', finish, 'chunks > 1', chunks > 1,
              'same text as the whole reply', text === whole.choices[0].message.content);

  // A budget past the server's limit is clamped to it, as llama-server does.
  const long = await client.chat.completions.create({ ...request, max_tokens: 100000 });
  console.log('max_tokens past the limit: finish', long.choices[0].finish_reason,
              'completion_tokens', long.usage.completion_tokens);
  await expectError('unknown model', () => client.chat.completions.create({ ...request, model: 'gpt-4o' }));
  await expectError('wrong JSON types', () => client.chat.completions.create({ model: 'tiny', messages: 'Hello' }));
  await expectError('unknown route', () => client.get('/embeddings-nope'));
  const wrongKey = new OpenAI({
    baseURL: process.env.PCCX_URL + '/v1', apiKey: 'wrong-key', timeout: 30000, maxRetries: 0,
  });
  await expectError('wrong API key', () => wrongKey.models.list());

  // A body that is not JSON at all (the client always sends JSON).
  const raw = await fetch(process.env.PCCX_URL + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer not-needed' },
    body: '{"model": ',
    signal: AbortSignal.timeout(30000),
  });
  console.log('malformed JSON: status', raw.status, 'code', (await raw.json()).error.code);
}

main().catch((e) => { console.log('FAIL:', e); process.exit(1); });
