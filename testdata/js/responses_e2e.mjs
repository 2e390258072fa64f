// Scenarios of the official OpenAI JavaScript client's Responses API
// against npud; each prints one JSON object for the Go test that ran it.
import OpenAI from 'openai'

const [baseURL, scenario] = process.argv.slice(2)
const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'x', maxRetries: 0 })

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
}

// The stream helper (responses.stream): its events, the text it
// assembled from the deltas, and its final response.
async function streamText() {
  const stream = client.responses.stream({ model: 'sim', input: 'hi' })
  const types = []
  const sequence = []
  let deltas = ''
  stream.on('response.output_text.delta', (ev) => { deltas += ev.delta })
  for await (const ev of stream) {
    types.push(ev.type)
    sequence.push(ev.sequence_number)
  }
  const final = await stream.finalResponse()
  return { types, sequence, deltas, outputText: final.output_text, status: final.status, usage: final.usage }
}

// A function-call round trip through the stream helper: the call comes
// whole in the final response; its output goes back by
// previous_response_id, and the model answers.
async function toolLoop() {
  const stream = client.responses.stream({ model: 'sim', input: 'What is the weather in Oslo?', tools: [weather] })
  let argDeltas = ''
  stream.on('response.function_call_arguments.delta', (ev) => { argDeltas += ev.delta })
  const first = await stream.finalResponse()
  const call = first.output.find((it) => it.type === 'function_call')
  const second = await client.responses.create({
    model: 'sim',
    previous_response_id: first.id,
    tools: [weather],
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
  })
  return { call, argDeltas, answer: second.output_text, status: second.status }
}

const scenarios = { streamText, toolLoop }
try {
  console.log(JSON.stringify(await scenarios[scenario]()))
} catch (err) {
  console.error(err)
  process.exit(1)
}
