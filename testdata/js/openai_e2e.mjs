// Scenarios of the official OpenAI JavaScript client against npud; each
// prints one JSON object for the Go test that ran it.
import OpenAI from 'openai'

const [baseURL, scenario] = process.argv.slice(2)
const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'x', maxRetries: 0 })

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

// The client's own agent loop (runTools), streaming: it assembles the
// streamed tool-call deltas, calls the function, sends the result back
// and returns the model's final answer.
async function runToolsLoop() {
  const called = []
  const runner = client.chat.completions.runTools({
    model: 'sim',
    seed: 3,
    stream: true,
    messages: [{ role: 'user', content: 'What is the weather in Oslo?' }],
    tools: [{
      type: 'function',
      function: {
        ...weather,
        parse: JSON.parse,
        function: (args) => {
          called.push(args)
          return `sunny in ${args.city}`
        },
      },
    }],
  })
  const finalContent = await runner.finalContent()
  const roles = runner.messages.map((m) => m.role)
  return { called, finalContent, roles }
}

// One streamed completion through the helper that assembles chunks.
async function streamToolCalls() {
  const stream = client.chat.completions.stream({
    model: 'sim',
    seed: 3,
    messages: [{ role: 'user', content: 'What is the weather in Oslo?' }],
    tools: [{ type: 'function', function: weather }],
  })
  let argumentDeltas = 0
  stream.on('tool_calls.function.arguments.delta', () => argumentDeltas++)
  const done = await stream.finalChatCompletion()
  const choice = done.choices[0]
  return { finishReason: choice.finish_reason, toolCalls: choice.message.tool_calls, content: choice.message.content, argumentDeltas }
}

const scenarios = { runToolsLoop, streamToolCalls }
const run = scenarios[scenario]
if (!run) {
  console.error(`unknown scenario ${scenario}`)
  process.exit(2)
}
console.log(JSON.stringify(await run()))
