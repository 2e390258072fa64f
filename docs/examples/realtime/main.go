// Command realtime is an example client of npud's WebSocket endpoint
// (/npud/v1/streams): it starts two generations on one connection, pauses and
// resumes the first, cancels the second after a few tokens, and prints what
// arrives.
//
//	go run ./docs/examples/realtime -url ws://127.0.0.1:11434/npud/v1/streams
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"
)

type message struct {
	Type         string `json:"type"`
	RequestID    string `json:"request_id"`
	Index        int    `json:"index"`
	Delta        string `json:"delta"`
	FinishReason string `json:"finish_reason"`
	Code         string `json:"code"`
	Message      string `json:"message"`
	Usage        *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func main() {
	url := flag.String("url", "ws://127.0.0.1:11434/npud/v1/streams", "the endpoint")
	key := flag.String("key", os.Getenv("NPUD_API_KEY"), "API key, if npud has keys")
	model := flag.String("model", "sim", "model")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	opts := &websocket.DialOptions{}
	if *key != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + *key}}
	}
	// The handshake response's body is websocket's to close, not ours.
	conn, _, err := websocket.Dial(ctx, *url, opts) //nolint:bodyclose // see above
	if err != nil {
		log.Fatalf("dial: %v", err)
	}
	defer conn.CloseNow()
	send := func(v any) {
		b, _ := json.Marshal(v)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			log.Fatalf("write: %v", err)
		}
	}
	start := func(id, prompt string) {
		send(map[string]any{"type": "start", "request_id": id, "model": *model, "max_tokens": 40,
			"messages": []map[string]string{{"role": "user", "content": prompt}}})
	}
	start("story", "Tell me a story")
	start("poem", "Write a poem")

	open, tokens, paused := 2, map[string]int{}, false
	for open > 0 {
		_, data, err := conn.Read(ctx)
		if err != nil {
			log.Fatalf("read: %v", err)
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			log.Fatalf("bad message %s: %v", data, err)
		}
		switch m.Type {
		case "token":
			tokens[m.RequestID]++
			fmt.Printf("[%s #%d] %q\n", m.RequestID, m.Index, m.Delta)
			if m.RequestID == "story" && tokens["story"] == 3 && !paused {
				paused = true
				send(map[string]any{"type": "pause", "request_id": "story"})
				time.AfterFunc(500*time.Millisecond, func() { send(map[string]any{"type": "resume", "request_id": "story"}) })
			}
			if m.RequestID == "poem" && tokens["poem"] == 5 {
				send(map[string]any{"type": "cancel", "request_id": "poem"})
			}
		case "final":
			open--
			fmt.Printf("[%s] final: %s\n", m.RequestID, m.FinishReason)
		case "error":
			open--
			fmt.Printf("[%s] error %s: %s\n", m.RequestID, m.Code, m.Message)
		default:
			fmt.Printf("%s\n", data)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
}
