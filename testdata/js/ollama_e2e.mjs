// End-to-end checks of npud with ollama-js, the official Ollama JavaScript
// client. Usage: node ollama_e2e.mjs BASE_URL SCENARIO
// It prints one JSON object with what it observed; the Go test judges it.
import { Ollama } from 'ollama'

const [host, scenario] = process.argv.slice(2)
const ollama = new Ollama({ host })

async function chatStream() {
  const stream = await ollama.chat({
    model: 'sim',
    messages: [{ role: 'user', content: 'hello from js' }],
    stream: true,
    options: { seed: 5, num_predict: 7 },
  })
  let text = ''
  let parts = 0
  let last
  for await (const part of stream) {
    parts++
    text += part.message.content
    last = part
  }
  return { text, parts, done: last.done, done_reason: last.done_reason, eval_count: last.eval_count }
}

async function generateWhole() {
  const r = await ollama.generate({ model: 'sim', prompt: 'js prompt', stream: false, options: { seed: 6, num_predict: 4 } })
  return { text: r.response, done: r.done, done_reason: r.done_reason, eval_count: r.eval_count }
}

async function abortMidStream() {
  const stream = await ollama.chat({
    model: 'sim',
    messages: [{ role: 'user', content: 'a long answer' }],
    stream: true,
  })
  let parts = 0
  let aborted = false
  try {
    for await (const part of stream) {
      parts++
      if (parts === 3) stream.abort()
    }
  } catch (err) {
    aborted = err.name === 'AbortError'
  }
  return { parts, aborted }
}

async function midStreamError() {
  try {
    const stream = await ollama.generate({ model: 'sim', prompt: 'fail please', stream: true })
    let text = ''
    for await (const part of stream) text += part.response
    return { thrown: false, text }
  } catch (err) {
    return { thrown: true, message: String(err.message) }
  }
}

// think: true: the reasoning streams in message.thinking, apart.
async function chatThinking() {
  const stream = await ollama.chat({
    model: 'sim',
    messages: [{ role: 'user', content: 'think it through' }],
    stream: true,
    think: true,
    options: { seed: 8 },
  })
  let text = ''
  let thinking = ''
  for await (const part of stream) {
    text += part.message.content
    thinking += part.message.thinking ?? ''
  }
  return { text, thinking }
}

// An agent loop: the model calls a tool (message.tool_calls, arguments an
// object), the tool's result goes back as a tool message, the model answers.
async function chatToolLoop() {
  const tools = [{
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  }]
  const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }]
  const calls = []
  let answer = ''
  let rounds = 0
  let doneReason = ''
  while (rounds < 4) {
    rounds++
    const stream = await ollama.chat({ model: 'sim', messages, tools, stream: true, think: false, options: { seed: 3 } })
    let content = ''
    const made = []
    for await (const part of stream) {
      content += part.message.content
      made.push(...(part.message.tool_calls ?? []))
      if (part.done) doneReason = part.done_reason
    }
    if (made.length === 0) {
      answer = content
      break
    }
    messages.push({ role: 'assistant', content, tool_calls: made })
    for (const call of made) {
      calls.push(call.function)
      messages.push({ role: 'tool', tool_name: call.function.name, content: `sunny in ${call.function.arguments.city}` })
    }
  }
  return { calls, answer, rounds, doneReason }
}

const scenarios = { chatStream, generateWhole, abortMidStream, midStreamError, chatThinking, chatToolLoop }
const run = scenarios[scenario]
if (!run) {
  console.error(`unknown scenario ${scenario}`)
  process.exit(2)
}
console.log(JSON.stringify(await run()))
