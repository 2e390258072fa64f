// Package relaytest replays scripted generations through a protocol's
// framing, by way of relay.Run as a handler does, and compares the bytes
// the framing writes with golden transcripts: txtar files, one a scenario,
// whose "events" file is the script and whose other files are what each
// framing wrote for it, byte for byte. A change to any protocol's framing
// fails its package's test until the transcripts are rewritten (go test
// -update) and the diff reviewed.
package relaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
)

// Framer is one protocol's framing under test.
type Framer struct {
	// Name is its file in every transcript (chat.sse, chat.ndjson, ...).
	Name string
	// New makes a fresh framing for one replay of src, and the source the
	// relay reads: src itself, or src wrapped to tell the framing what a
	// journal cursor would (the index of each event).
	New func(t *testing.T, src *Source) (relay.Framing, relay.Source)
	// Messages: each frame is a message of its own (a WebSocket's), put on
	// a line of its own in the transcript; otherwise the frames are one
	// byte stream (an HTTP body), written as they are.
	Messages bool
	// Varying are the parts of a frame that change from run to run
	// (clocks, durations), replaced before the comparison.
	Varying []Replace
}

// Replace replaces what Pattern matches with With (regexp syntax).
type Replace struct {
	Pattern *regexp.Regexp
	With    string
}

// Step is one line of a script: an event, or how the source fails.
type Step struct {
	Text      string              `json:"text,omitempty"`
	Reasoning string              `json:"reasoning,omitempty"`
	ToolCalls []npu.ToolCallDelta `json:"tool_calls,omitempty"`
	Tokens    int                 `json:"tokens,omitempty"`
	Heartbeat bool                `json:"heartbeat,omitempty"`
	// Loading goes with a heartbeat while the model loads.
	Loading *Loading `json:"loading,omitempty"`
	// Done ends the generation with this result.
	Done *Result `json:"done,omitempty"`
	// Error fails the source with the sentinel of this npu.ErrorCode,
	// wrapped in Message when set.
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	// AfterEnd fails the source with relay.ErrAfterEnd: a reader that
	// resumed after the last event.
	AfterEnd bool `json:"after_end,omitempty"`
}

// Loading is a script's npu.LoadStatus: the load began Seconds ago.
type Loading struct {
	Model   string           `json:"model"`
	Compile npu.CompileState `json:"compile,omitempty"`
	Device  string           `json:"device,omitempty"`
	Seconds int              `json:"seconds"`
}

// Result is a script's npu.Result (no timings: they vary).
type Result struct {
	FinishReason       npu.FinishReason `json:"finish_reason"`
	PromptTokens       int              `json:"prompt_tokens,omitempty"`
	CachedPromptTokens int              `json:"cached_prompt_tokens,omitempty"`
	CompletionTokens   int              `json:"completion_tokens,omitempty"`
	StopSequence       string           `json:"stop_sequence,omitempty"`
}

// Source replays a script's steps as a generation's events.
type Source struct {
	steps []Step
	next  int
	kept  int // events a journal would have kept so far (not heartbeats)
	index int
}

// Next returns the next step's event or failure; past the last step it
// fails, as a stream that ended without its end would.
func (s *Source) Next(context.Context) (npu.Event, error) {
	if s.next >= len(s.steps) {
		return npu.Event{}, errors.New("relaytest: the script ended without a done, error or after_end step")
	}
	st := s.steps[s.next]
	s.next++
	s.index = s.kept
	if !st.Heartbeat {
		s.kept++
	}
	switch {
	case st.AfterEnd:
		return npu.Event{}, relay.ErrAfterEnd
	case st.Error != "":
		err := npu.Sentinel(st.Error)
		if err == nil {
			return npu.Event{}, fmt.Errorf("relaytest: no sentinel error %q", st.Error)
		}
		if st.Message != "" {
			err = fmt.Errorf("%s: %w", st.Message, err)
		}
		return npu.Event{}, err
	case st.Done != nil:
		d := st.Done
		return npu.Event{Done: true, Result: npu.Result{FinishReason: d.FinishReason, PromptTokens: d.PromptTokens,
			CachedPromptTokens: d.CachedPromptTokens, CompletionTokens: d.CompletionTokens, StopSequence: d.StopSequence}}, nil
	}
	ev := npu.Event{Text: st.Text, Reasoning: st.Reasoning, ToolCalls: st.ToolCalls, Tokens: st.Tokens, Heartbeat: st.Heartbeat}
	if l := st.Loading; l != nil {
		// Half a second more, so that the whole seconds a framing prints
		// are Seconds however long the replay takes.
		since := time.Now().Add(-time.Duration(l.Seconds)*time.Second - 500*time.Millisecond)
		ev.Loading = &npu.LoadStatus{Model: l.Model, Compile: l.Compile, Device: l.Device, Since: since}
	}
	return ev, nil
}

// Index is the number of the event Next returned last, as a journal
// numbers what it keeps: from 0, heartbeats not kept (a heartbeat has the
// number of the event after it).
func (s *Source) Index() int { return s.index }

// Check replays every transcript in dir (*.txtar) through each framer and
// compares what it wrote with the transcript's file of the framer's name;
// with update it rewrites those files instead (the comment and the events
// stay as they are).
func Check(t *testing.T, dir string, update bool, framers ...Framer) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no transcripts in %s", dir)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ar := txtar.Parse(raw)
			script := fileOf(ar, "events")
			if script == nil {
				t.Fatalf("%s has no events file", path)
			}
			steps, err := parseSteps(script.Data)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			want := &txtar.Archive{Comment: ar.Comment, Files: []txtar.File{*script}}
			for _, fr := range framers {
				want.Files = append(want.Files, txtar.File{Name: fr.Name, Data: replay(t, fr, steps)})
			}
			got := txtar.Format(want)
			if update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(raw, got) {
				t.Errorf("%s: the framing changed (if that is intended, rerun with -update and review the diff):\n%s",
					path, diff(ar, want))
			}
		})
	}
}

func fileOf(ar *txtar.Archive, name string) *txtar.File {
	i := slices.IndexFunc(ar.Files, func(f txtar.File) bool { return f.Name == name })
	if i < 0 {
		return nil
	}
	return &ar.Files[i]
}

func parseSteps(data []byte) ([]Step, error) {
	var steps []Step
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var st Step
		if err := dec.Decode(&st); err != nil {
			return nil, fmt.Errorf("events line %d: %w", i+1, err)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// replay runs the relay over the script with a fresh framing and returns
// what it wrote.
func replay(t *testing.T, fr Framer, steps []Step) []byte {
	src := &Source{steps: steps}
	framing, relaySrc := fr.New(t, src)
	w := &writer{messages: fr.Messages}
	info := &reqinfo.Info{Start: time.Now()}
	info.Record(relay.Run(t.Context(), w, relaySrc, framing, func(err error) {
		w.out.WriteString("(answered before the commit: " + err.Error() + ")\n")
	}))
	out := w.out.Bytes()
	for _, v := range fr.Varying {
		out = v.Pattern.ReplaceAll(out, []byte(v.With))
	}
	return out
}

// writer is an always-working client: what the relay commits and writes.
type writer struct {
	messages  bool
	committed bool
	out       bytes.Buffer
}

func (w *writer) Committed() bool { return w.committed }
func (w *writer) Commit(string)   { w.committed = true }
func (w *writer) Write(frame []byte, _ bool) error {
	w.out.Write(frame)
	if w.messages {
		w.out.WriteByte('\n')
	}
	return nil
}

// diff names each file that differs, with the lines only one side has.
func diff(have, want *txtar.Archive) string {
	var b bytes.Buffer
	for _, wf := range want.Files {
		hf := fileOf(have, wf.Name)
		if hf == nil {
			fmt.Fprintf(&b, "-- %s -- is missing\n", wf.Name)
			continue
		}
		if bytes.Equal(hf.Data, wf.Data) {
			continue
		}
		fmt.Fprintf(&b, "-- %s --\n", wf.Name)
		hl, wl := bytes.Split(hf.Data, []byte("\n")), bytes.Split(wf.Data, []byte("\n"))
		for _, l := range hl {
			if !slices.ContainsFunc(wl, func(x []byte) bool { return bytes.Equal(x, l) }) {
				fmt.Fprintf(&b, "- %s\n", l)
			}
		}
		for _, l := range wl {
			if !slices.ContainsFunc(hl, func(x []byte) bool { return bytes.Equal(x, l) }) {
				fmt.Fprintf(&b, "+ %s\n", l)
			}
		}
	}
	for _, hf := range have.Files {
		if fileOf(want, hf.Name) == nil {
			fmt.Fprintf(&b, "-- %s -- is not written by any framing\n", hf.Name)
		}
	}
	if b.Len() == 0 {
		b.WriteString("(the files are equal; the archive's layout differs)\n")
	}
	return b.String()
}
