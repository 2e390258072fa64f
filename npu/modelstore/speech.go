package modelstore

import (
	"os"
	"path/filepath"
)

// The IR files of a Whisper export (optimum-intel's, as the
// OpenVINO/whisper-*-ov repositories hold it): GenAI's Whisper pipeline
// reads these two names from the model folder (openvino.genai
// src/cpp/src/whisper/pipeline.cpp for the encoder,
// src/cpp/src/whisper/models/statefull_decoder.cpp for the decoder).
const (
	WhisperEncoderIR = "openvino_encoder_model.xml"
	WhisperDecoderIR = "openvino_decoder_model.xml"
)

// IsSpeechModel reports whether the model folder dir holds a Whisper
// export: an encoder and a decoder IR. Such a model transcribes audio
// through GenAI's Whisper pipeline and does not chat.
func IsSpeechModel(dir string) bool {
	for _, f := range []string{WhisperEncoderIR, WhisperDecoderIR} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// RequiredFile is a file a GenAI pipeline reads from a model folder, and
// what it is, for people.
type RequiredFile struct{ Name, What string }

// SpeechModelFiles are what GenAI's Whisper pipeline needs in a model
// folder (src/cpp/src/whisper/pipeline_base.hpp, pipeline.cpp,
// models/statefull_decoder.cpp): the two IRs and their weights, the
// tokenizer and detokenizer, and generation_config.json, whose lang_to_id
// a multilingual model cannot do without (without the file the config is
// multilingual with no languages, and WhisperGenerationConfig::validate
// fails every generate: src/cpp/src/whisper/generation_config.cpp).
// preprocessor_config.json and config.json are optional: GenAI falls back
// to Whisper's defaults (16 kHz, 30-second windows).
var SpeechModelFiles = []RequiredFile{
	{WhisperEncoderIR, "the encoder's IR"},
	{"openvino_encoder_model.bin", "the encoder's weights"},
	{WhisperDecoderIR, "the decoder's IR"},
	{"openvino_decoder_model.bin", "the decoder's weights"},
	{"openvino_tokenizer.xml", "the tokenizer"},
	{"openvino_detokenizer.xml", "the detokenizer"},
	{"generation_config.json", "the languages and tasks, lang_to_id"},
}

// MissingSpeechFiles lists what the speech model folder dir lacks of
// SpeechModelFiles, each as "file (what)"; none when it is complete.
// npud doctor reports them.
func MissingSpeechFiles(dir string) []string {
	var missing []string
	for _, f := range SpeechModelFiles {
		if _, err := os.Stat(filepath.Join(dir, f.Name)); err != nil {
			missing = append(missing, f.Name+" ("+f.What+")")
		}
	}
	return missing
}
