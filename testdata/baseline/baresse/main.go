// Command baresse is the ceiling for PERFORMANCE.md: the least a Go server
// can do to stream an OpenAI chat completion with net/http. No engine, no
// queue, no bridge: max_tokens chunks of pre-built JSON, one flush each.
//
//	go run ./testdata/baseline/baresse -listen 127.0.0.1:18001
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strconv"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18001", "address")
	flag.Parse()
	role := []byte(`data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"sim","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	token := []byte(`data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"sim","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}` + "\n\n")
	http.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		flusher := w.(http.Flusher)
		_, _ = w.Write(role)
		for range req.MaxTokens {
			if _, err := w.Write(token); err != nil {
				return
			}
			flusher.Flush()
		}
		n := strconv.Itoa(req.MaxTokens)
		_, _ = w.Write([]byte(`data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"sim","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n" +
			`data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"sim","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":` + n + `,"total_tokens":` + n + `}}` + "\n\n" +
			"data: [DONE]\n\n"))
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
