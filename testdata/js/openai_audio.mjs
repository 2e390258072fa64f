// The official OpenAI JavaScript client's audio calls against npud: the
// WAV at the given path transcribed (json, verbose_json, srt) and
// translated, streamed (transcript.text.delta / .done events), an MP3 at
// the second path transcribed; prints one JSON object for the Go test
// that ran it.
import fs from 'node:fs'
import OpenAI from 'openai'

const [baseURL, wavPath, mp3Path] = process.argv.slice(2)
const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'x', maxRetries: 0 })

const json = await client.audio.transcriptions.create({ file: fs.createReadStream(wavPath), model: 'sim' })
const verbose = await client.audio.transcriptions.create({
  file: fs.createReadStream(wavPath), model: 'sim', response_format: 'verbose_json', language: 'en',
  timestamp_granularities: ['segment'],
})
const srt = await client.audio.transcriptions.create({ file: fs.createReadStream(wavPath), model: 'sim', response_format: 'srt' })
const translation = await client.audio.translations.create({ file: fs.createReadStream(wavPath), model: 'sim' })
const events = []
const stream = await client.audio.transcriptions.create({ file: fs.createReadStream(wavPath), model: 'sim', stream: true })
for await (const ev of stream) {
  events.push(ev)
}
const mp3 = await client.audio.transcriptions.create({ file: fs.createReadStream(mp3Path), model: 'sim' })
let refused
try {
  await client.audio.transcriptions.create({ file: await OpenAI.toFile(Buffer.from('%PDF-1.7 not audio'), 'a.pdf'), model: 'sim' })
} catch (e) {
  refused = { status: e.status, code: e.code, param: e.param, message: e.message }
}
console.log(JSON.stringify({
  text: json.text, verbose: { duration: verbose.duration, language: verbose.language, segments: verbose.segments },
  srt, translation: translation.text, events, mp3: mp3.text, refused,
}))
