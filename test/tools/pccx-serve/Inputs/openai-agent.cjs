// An agent loop with OpenAI's own Node.js client against pccx-serve:
// usage: node openai-agent.cjs NODE_DIR (the server's base URL in $PCCX_URL).
// The model asks for tools, the loop runs them and sends their results back
// as `tool` messages, until the model answers in text (the last step asks
// for text with tool_choice "none"). Prints the transcript.
const path = require('path');
const mod = require(path.join(process.argv[2], 'node_modules', 'openai'));
const OpenAI = mod.OpenAI || mod.default || mod;

const client = new OpenAI({
  baseURL: process.env.PCCX_URL + '/v1',
  apiKey: 'not-needed',
  timeout: 60000,
  maxRetries: 0,
});

const tools = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Adds two integers.',
      parameters: {
        type: 'object',
        properties: { a: { type: 'integer' }, b: { type: 'integer' } },
        required: ['a', 'b'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'echo',
      description: 'Repeats a short text.',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string', maxLength: 8 } },
        required: ['text'],
        additionalProperties: false,
      },
    },
  },
];

const run = {
  add: (args) => String(BigInt(args.a) + BigInt(args.b)),
  echo: (args) => args.text,
};

// The streamed form of a request, put together from its deltas.
async function streamed(request) {
  const stream = await client.chat.completions.create({ ...request, stream: true });
  const message = { role: null, content: null, tool_calls: undefined };
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (choice.delta.role) message.role = choice.delta.role;
    if (choice.delta.content) message.content = (message.content || '') + choice.delta.content;
    for (const call of choice.delta.tool_calls || []) {
      message.tool_calls = message.tool_calls || [];
      const merged = (message.tool_calls[call.index] =
        message.tool_calls[call.index] || { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (call.id) merged.id = call.id;
      if (call.function && call.function.name) merged.function.name += call.function.name;
      if (call.function && call.function.arguments) merged.function.arguments += call.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { message, finish };
}

async function main() {
  const messages = [{ role: 'user', content: 'What is 2 plus 3? Then echo the sum.' }];
  const choices = ['required', 'auto', 'auto', 'none'];
  for (let step = 0; step < choices.length; ++step) {
    const request = { model: 'tiny', messages, tools, tool_choice: choices[step], max_tokens: 400, temperature: 0 };
    const reply = await client.chat.completions.create(request);
    const choice = reply.choices[0];
    const stream = await streamed(request);
    // The same calls (each request's call ids are its own).
    const functions = (m) => JSON.stringify((m.tool_calls || []).map((c) => [c.function.name, c.function.arguments]));
    const same = stream.finish === choice.finish_reason &&
      functions(stream.message) === functions(choice.message) &&
      (stream.message.content || null) === (choice.message.content || null);
    console.log(`step ${step} (tool_choice ${choices[step]}): finish ${choice.finish_reason}, streamed the same ${same}`);
    messages.push(choice.message);
    if (choice.finish_reason !== 'tool_calls') {
      console.log(`  answer: ${JSON.stringify(choice.message.content)}`);
      break;
    }
    for (const call of choice.message.tool_calls) {
      const args = JSON.parse(call.function.arguments);
      const result = run[call.function.name](args);
      console.log(`  call ${call.function.name}(${call.function.arguments}) -> ${JSON.stringify(result)}`);
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    }
  }
  console.log(`messages: ${messages.length}, roles ${messages.map((m) => m.role).join(',')}`);
}

main().catch((e) => {
  console.log('agent failed:', e.status, e.message);
  process.exit(1);
});
