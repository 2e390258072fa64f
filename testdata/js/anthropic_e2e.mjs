// Scenarios of the official Anthropic JavaScript client against npud; each
// prints one JSON object for the Go test that ran it.
import Anthropic from '@anthropic-ai/sdk'

const [baseURL, scenario] = process.argv.slice(2)
const client = new Anthropic({ baseURL, apiKey: 'x', maxRetries: 0 })

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

// A tool-use loop through the streaming helper: the model calls the tool
// (its input assembled from input_json_delta events), the result goes
// back, the model answers.
async function toolLoop() {
  const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }]
  const called = []
  const stopReasons = []
  let inputJsonEvents = 0
  for (let turn = 0; turn < 3; turn++) {
    const stream = client.messages.stream({ model: 'sim', max_tokens: 512, messages, tools: [weather] })
    stream.on('inputJson', () => inputJsonEvents++)
    const message = await stream.finalMessage()
    stopReasons.push(message.stop_reason)
    messages.push({ role: 'assistant', content: message.content })
    if (message.stop_reason !== 'tool_use') {
      const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('')
      return { called, stopReasons, inputJsonEvents, text }
    }
    const results = message.content.filter((b) => b.type === 'tool_use').map((b) => {
      called.push(b.input)
      return { type: 'tool_result', tool_use_id: b.id, content: `sunny in ${b.input.city}` }
    })
    messages.push({ role: 'user', content: results })
  }
  return { called, stopReasons, inputJsonEvents, text: null }
}

// Thinking, streamed: thinking events, then text; the final message has
// both blocks.
async function thinking() {
  let thinkingEvents = 0
  let textEvents = 0
  const stream = client.messages.stream({
    model: 'sim', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'Why is the sky blue?' }],
  })
  stream.on('thinking', () => thinkingEvents++)
  stream.on('text', () => textEvents++)
  const message = await stream.finalMessage()
  return { thinkingEvents, textEvents, blocks: message.content.map((b) => b.type), usage: message.usage }
}

async function countTokens() {
  const r = await client.messages.countTokens({
    model: 'sim', system: 'be brief', messages: [{ role: 'user', content: 'hello there' }], tools: [weather],
  })
  return { inputTokens: r.input_tokens }
}

// An unknown model: the client's typed error.
async function notFound() {
  try {
    await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
    return { error: null }
  } catch (e) {
    return { error: e.constructor.name, status: e.status, type: e.error?.error?.type, message: e.error?.error?.message }
  }
}

const scenarios = { toolLoop, thinking, countTokens, notFound }
process.stdout.write(JSON.stringify(await scenarios[scenario]()))
