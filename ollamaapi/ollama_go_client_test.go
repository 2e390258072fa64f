package ollamaapi_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/ollamaapi"
)

func TestMain(m *testing.M) {
	daemontest.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

// clientFixture is a real npud on loopback and the official Ollama Go
// client pointed at it.
type clientFixture struct {
	srv    *daemontest.Server
	client *api.Client
	http   *http.Client
}

func newClientFixture(t *testing.T, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *clientFixture {
	t.Helper()
	srv := daemontest.StartSim(t, mutate, faults)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	hc := &http.Client{Transport: transport}
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return &clientFixture{srv: srv, client: api.NewClient(base, hc), http: hc}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func boolPtr(b bool) *bool { return &b }

func TestClientHeartbeatVersionListShow(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	ctx := testContext(t)
	require.NoError(t, f.client.Heartbeat(ctx))

	v, err := f.client.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, ollamaapi.CompatVersion, v)

	list, err := f.client.List(ctx)
	require.NoError(t, err)
	require.Len(t, list.Models, 1)
	assert.Equal(t, "sim", list.Models[0].Name)
	assert.Equal(t, "simulated", list.Models[0].Details.Format)

	show, err := f.client.Show(ctx, &api.ShowRequest{Model: "sim"})
	require.NoError(t, err)
	assert.NotNil(t, show.ModelInfo)
	assert.Contains(t, show.Modelfile, "simulated")
	assert.EqualValues(t, 32768, show.ModelInfo["sim.context_length"])
	// Issue 17: "embedding" among the capabilities made `ollama run` print
	// a vector instead of chatting.
	assert.Equal(t, []model.Capability{model.CapabilityCompletion, model.CapabilityTools, model.CapabilityThinking, model.CapabilityVision, "audio"},
		show.Capabilities, "the simulated model calls tools, reasons, sees and hears when asked")

	_, err = f.client.Show(ctx, &api.ShowRequest{Model: "nope"})
	var statusErr api.StatusError
	require.ErrorAs(t, err, &statusErr)
	assert.Equal(t, http.StatusNotFound, statusErr.StatusCode)
}

func TestClientGenerate(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	want := strings.Join(sim.Tokens(4, "Why is the sky blue?")[:6], "")
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "whole"}[stream], func(t *testing.T) {
			var text strings.Builder
			var last api.GenerateResponse
			calls := 0
			err := f.client.Generate(testContext(t), &api.GenerateRequest{
				Model: "sim", Prompt: "Why is the sky blue?", Stream: boolPtr(stream),
				Options: map[string]any{"num_predict": 6, "seed": 4, "temperature": 0.7},
			}, func(r api.GenerateResponse) error {
				calls++
				text.WriteString(r.Response)
				last = r
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, want, text.String())
			assert.True(t, last.Done)
			assert.Equal(t, "length", last.DoneReason)
			assert.Equal(t, 6, last.EvalCount)
			assert.Equal(t, sim.CountTokens("Why is the sky blue?"), last.PromptEvalCount)
			assert.Positive(t, last.TotalDuration)
			assert.Positive(t, last.EvalDuration)
			assert.Positive(t, last.PromptEvalDuration)
			assert.GreaterOrEqual(t, last.TotalDuration, last.EvalDuration+last.PromptEvalDuration)
			if stream {
				assert.Greater(t, calls, 2)
			} else {
				assert.Equal(t, 1, calls)
			}
		})
	}
}

func TestClientChat(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	msgs := []api.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello"}}
	prompt := "system: Be brief.\nuser: Hello\n"
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "whole"}[stream], func(t *testing.T) {
			var text strings.Builder
			var last api.ChatResponse
			err := f.client.Chat(testContext(t), &api.ChatRequest{
				Model: "sim", Messages: msgs, Stream: boolPtr(stream), Options: map[string]any{"seed": 2},
			}, func(r api.ChatResponse) error {
				assert.Equal(t, "assistant", r.Message.Role, "every chunk carries the role")
				text.WriteString(r.Message.Content)
				last = r
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, sim.Text(2, prompt), text.String())
			assert.True(t, last.Done)
			assert.Equal(t, "stop", last.DoneReason)
			assert.Equal(t, len(sim.Tokens(2, prompt)), last.EvalCount)
		})
	}
}

func TestClientStopOption(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	full := sim.Text(8, "stop test")
	stop := []rune(full)
	stopStr := string(stop[10:14])
	var text strings.Builder
	var last api.GenerateResponse
	err := f.client.Generate(testContext(t), &api.GenerateRequest{Model: "sim", Prompt: "stop test",
		Options: map[string]any{"seed": 8, "stop": []string{stopStr}}}, func(r api.GenerateResponse) error {
		text.WriteString(r.Response)
		last = r
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, full[:strings.Index(full, stopStr)], text.String())
	assert.Equal(t, "stop", last.DoneReason)
}

func TestClientLoadUnloadAndListRunning(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	ctx := testContext(t)
	running, err := f.client.ListRunning(ctx)
	require.NoError(t, err)
	assert.Empty(t, running.Models)

	var got api.GenerateResponse
	require.NoError(t, f.client.Generate(ctx, &api.GenerateRequest{Model: "sim", KeepAlive: &api.Duration{Duration: 10 * time.Minute}},
		func(r api.GenerateResponse) error { got = r; return nil }))
	assert.True(t, got.Done)
	assert.Equal(t, "load", got.DoneReason)

	running, err = f.client.ListRunning(ctx)
	require.NoError(t, err)
	require.Len(t, running.Models, 1)
	assert.Equal(t, "sim", running.Models[0].Name)
	assert.WithinDuration(t, time.Now().Add(10*time.Minute), running.Models[0].ExpiresAt, time.Minute)
	assert.Equal(t, 32768, running.Models[0].ContextLength, "the CLI's CONTEXT column (issue 17)")

	var chat api.ChatResponse
	require.NoError(t, f.client.Chat(ctx, &api.ChatRequest{Model: "sim", KeepAlive: &api.Duration{Duration: 0}},
		func(r api.ChatResponse) error { chat = r; return nil }))
	assert.Equal(t, "unload", chat.DoneReason)
	running, err = f.client.ListRunning(ctx)
	require.NoError(t, err)
	assert.Empty(t, running.Models)
}

func TestClientEmbed(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	resp, err := f.client.Embed(testContext(t), &api.EmbedRequest{Model: "sim", Input: []string{"a", "b"}})
	require.NoError(t, err)
	require.Len(t, resp.Embeddings, 2)
	for i, text := range []string{"a", "b"} {
		assert.Equal(t, sim.Embedding(text), resp.Embeddings[i])
		var norm float64
		for _, x := range resp.Embeddings[i] {
			norm += float64(x) * float64(x)
		}
		assert.InDelta(t, 1, math.Sqrt(norm), 1e-5, "L2-normalized")
	}
	assert.NotEqual(t, resp.Embeddings[0], resp.Embeddings[1])

	legacy, err := f.client.Embeddings(testContext(t), &api.EmbeddingRequest{Model: "sim", Prompt: "a"})
	require.NoError(t, err)
	require.Len(t, legacy.Embedding, sim.EmbeddingDims)
	assert.InDelta(t, float64(sim.Embedding("a")[0]), legacy.Embedding[0], 1e-6)
}

func TestClientMidStreamErrorSurfaces(t *testing.T) {
	f := newClientFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: 3} })
	var text strings.Builder
	err := f.client.Generate(testContext(t), &api.GenerateRequest{Model: "sim", Prompt: "p"},
		func(r api.GenerateResponse) error {
			assert.False(t, r.Done, "a failed stream has no done object")
			text.WriteString(r.Response)
			return nil
		})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "simulated fault")
	assert.Equal(t, strings.Join(sim.Tokens(0, "p")[:2], ""), text.String())
}

func TestClientCancelViaContext(t *testing.T) {
	f := newClientFixture(t, func(c *daemon.Config) { c.SimITL = 10 * time.Millisecond }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chunks := 0
	err := f.client.Generate(ctx, &api.GenerateRequest{Model: "sim", Prompt: "long"}, func(r api.GenerateResponse) error {
		chunks++
		if chunks == 2 {
			cancel()
		}
		return nil
	})
	// The Go client does not report a read error after its context ends
	// (it ignores the scanner's error), so what shows is the stream stopping.
	_ = err
	assert.Less(t, chunks, len(sim.Tokens(0, "long")), "the stream stopped early")
	require.Eventually(t, func() bool {
		return daemontest.Health(t, f.http, f.srv.URL)["active_streams"] == float64(0)
	}, 10*time.Second, 5*time.Millisecond, "the engine slot is freed")
}

func TestClientStopsByReturningAnError(t *testing.T) {
	f := newClientFixture(t, func(c *daemon.Config) { c.SimITL = 10 * time.Millisecond }, nil)
	errEnough := errors.New("enough")
	chunks := 0
	err := f.client.Chat(testContext(t), &api.ChatRequest{Model: "sim", Messages: []api.Message{{Role: "user", Content: "long"}}},
		func(api.ChatResponse) error {
			chunks++
			if chunks == 2 {
				return errEnough
			}
			return nil
		})
	require.ErrorIs(t, err, errEnough)
	require.Eventually(t, func() bool {
		return daemontest.Health(t, f.http, f.srv.URL)["active_streams"] == float64(0)
	}, 10*time.Second, 5*time.Millisecond, "closing the response frees the engine slot")
}

func TestClientErrorsBeforeTheStream(t *testing.T) {
	f := newClientFixture(t, func(c *daemon.Config) { c.MaxQueue = 0 }, nil)
	ctx := testContext(t)
	tests := []struct {
		name   string
		req    *api.GenerateRequest
		status int
		has    string
	}{
		{"unknown model", &api.GenerateRequest{Model: "llama3", Prompt: "x"}, 404, "not served here, try pulling it first (served: sim); to answer to this name, start npud with --alias NAME=MODEL"},
		{"bad option type", &api.GenerateRequest{Model: "sim", Prompt: "x", Options: map[string]any{"top_k": "many"}}, 400, `"top_k"`},
		{"num_ctx too large", &api.GenerateRequest{Model: "sim", Prompt: "x", Options: map[string]any{"num_ctx": 1 << 20}}, 400, "num_ctx"},
		{"images", &api.GenerateRequest{Model: "sim", Prompt: "x", Images: []api.ImageData{[]byte("png")}}, 400, "images"},
		{"suffix", &api.GenerateRequest{Model: "sim", Prompt: "x", Suffix: "y"}, 400, "suffix"},
		{"raw", &api.GenerateRequest{Model: "sim", Prompt: "x", Raw: true}, 400, "raw"},
		{"format of another kind", &api.GenerateRequest{Model: "sim", Prompt: "x", Format: []byte(`"xml"`)}, 400, `format must be "json" or a JSON schema object, got "xml"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := f.client.Generate(ctx, tc.req, func(api.GenerateResponse) error { return nil })
			var statusErr api.StatusError
			require.ErrorAs(t, err, &statusErr)
			assert.Equal(t, tc.status, statusErr.StatusCode)
			assert.Contains(t, statusErr.ErrorMessage, tc.has)
		})
	}
	err := f.client.Pull(ctx, &api.PullRequest{Model: "llama3"}, func(api.ProgressResponse) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fixed set of models")
	require.NoError(t, f.client.Pull(ctx, &api.PullRequest{Model: "sim"}, func(api.ProgressResponse) error { return nil }))
	err = f.client.Delete(ctx, &api.DeleteRequest{Model: "sim"})
	require.Error(t, err)
	err = f.client.Copy(ctx, &api.CopyRequest{Source: "sim", Destination: "sim2"})
	require.Error(t, err)
}

// describedEngine is the simulated engine presenting a model the way the
// OpenVINO engine presents a folder it scanned: size on disk and details.
type describedEngine struct{ *sim.Engine }

func (describedEngine) Name() string    { return "openvino" }
func (describedEngine) Simulated() bool { return false }
func (e describedEngine) Models() []npu.ModelInfo {
	m := e.Engine.Models()
	m[0].Size = 900 << 20
	m[0].Details = npu.ModelDetails{Architecture: "qwen2", ParameterCount: 1_543_656_960, ParameterSize: "1.5B", Quantization: "INT4",
		EmbeddingLength: 1536, BlockCount: 28, HeadCount: 12, HeadCountKV: 2, VocabSize: 151936, TrainedContext: 32768}
	return m
}

// Issue 17: `ollama show` reads model_info's general.architecture, then
// "<arch>.context_length" and "<arch>.embedding_length", the details'
// parameter size and quantization; `ollama ps` reads size, size_vram and
// context_length. A model's folder fills them.
func TestClientShowAndPsCarryWhatTheCLIReads(t *testing.T) {
	cfg := daemontest.Defaults(t)
	srv := daemontest.Start(t, cfg, describedEngine{sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond})})
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	client := api.NewClient(base, http.DefaultClient)
	ctx := testContext(t)

	show, err := client.Show(ctx, &api.ShowRequest{Model: "sim"})
	require.NoError(t, err)
	arch, _ := show.ModelInfo["general.architecture"].(string)
	assert.Equal(t, "qwen2", arch)
	assert.EqualValues(t, 32768, show.ModelInfo[arch+".context_length"])
	assert.EqualValues(t, 1536, show.ModelInfo[arch+".embedding_length"])
	assert.EqualValues(t, 28, show.ModelInfo[arch+".block_count"])
	assert.EqualValues(t, 1_543_656_960, show.ModelInfo["general.parameter_count"])
	assert.Equal(t, "1.5B", show.Details.ParameterSize)
	assert.Equal(t, "INT4", show.Details.QuantizationLevel)
	assert.Equal(t, "qwen2", show.Details.Family)
	assert.Equal(t, "openvino", show.Details.Format)

	list, err := client.List(ctx)
	require.NoError(t, err)
	require.Len(t, list.Models, 1)
	assert.EqualValues(t, 900<<20, list.Models[0].Size)

	require.NoError(t, client.Generate(ctx, &api.GenerateRequest{Model: "sim", KeepAlive: &api.Duration{Duration: time.Minute}},
		func(api.GenerateResponse) error { return nil }))
	running, err := client.ListRunning(ctx)
	require.NoError(t, err)
	require.Len(t, running.Models, 1)
	ps := running.Models[0]
	assert.EqualValues(t, 900<<20, ps.Size, "the CLI's SIZE column")
	assert.Zero(t, ps.SizeVRAM, "NPU and CPU models live in system memory")
	assert.Equal(t, 32768, ps.ContextLength)
	assert.Equal(t, "1.5B", ps.Details.ParameterSize)
	assert.Len(t, ps.Digest, 64, "the CLI prints digest[:12]")
}

// Issue 16: think: true through the Ollama Go client: the reasoning comes
// in message.thinking (chat) and thinking (generate), never in the
// content; a bad think value is a 400.
func TestClientThinking(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	ctx := testContext(t)
	seed := map[string]any{"seed": 5}
	var thinking, content strings.Builder
	require.NoError(t, f.client.Chat(ctx, &api.ChatRequest{Model: "sim", Think: &api.ThinkValue{Value: true}, Options: seed,
		Messages: []api.Message{{Role: "user", Content: "plan a trip"}}}, func(r api.ChatResponse) error {
		thinking.WriteString(r.Message.Thinking)
		content.WriteString(r.Message.Content)
		return nil
	}))
	thoughts := sim.Reasoning(5, "user: plan a trip\n")
	assert.Equal(t, strings.TrimSpace(strings.Join(thoughts[1:len(thoughts)-2], "")), thinking.String())
	assert.NotEmpty(t, content.String())
	assert.NotContains(t, content.String(), "think>")

	stream := false
	var whole api.ChatResponse
	require.NoError(t, f.client.Chat(ctx, &api.ChatRequest{Model: "sim", Think: &api.ThinkValue{Value: "high"}, Options: seed, Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "plan a trip"}}}, func(r api.ChatResponse) error { whole = r; return nil }))
	assert.Equal(t, thinking.String(), whole.Message.Thinking)
	assert.Equal(t, content.String(), whole.Message.Content)

	var gen api.GenerateResponse
	require.NoError(t, f.client.Generate(ctx, &api.GenerateRequest{Model: "sim", Prompt: "plan a trip", Think: &api.ThinkValue{Value: true}, Stream: &stream, Options: seed},
		func(r api.GenerateResponse) error { gen = r; return nil }))
	assert.NotEmpty(t, gen.Thinking)
	assert.NotContains(t, gen.Response, "think>")

	err := f.client.Chat(ctx, &api.ChatRequest{Model: "sim", Think: &api.ThinkValue{Value: "extreme"},
		Messages: []api.Message{{Role: "user", Content: "x"}}}, func(api.ChatResponse) error { return nil })
	var statusErr api.StatusError
	require.ErrorAs(t, err, &statusErr)
	assert.Equal(t, http.StatusBadRequest, statusErr.StatusCode)
}
