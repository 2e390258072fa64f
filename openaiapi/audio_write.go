package openaiapi

import (
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
)

type transcriptSegment struct {
	ID               int     `json:"id"`
	Seek             int     `json:"seek"`
	Start            float64 `json:"start"`
	End              float64 `json:"end"`
	Text             string  `json:"text"`
	Tokens           []int   `json:"tokens"`
	Temperature      float64 `json:"temperature"`
	AvgLogprob       float64 `json:"avg_logprob"`
	CompressionRatio float64 `json:"compression_ratio"`
	NoSpeechProb     float64 `json:"no_speech_prob"`
}

// writeTranscript answers in the response_format asked for. GenAI gives
// no token ids or probabilities with its chunks, so verbose_json's
// segments carry empty tokens and zero scores.
func writeTranscript(c *gin.Context, format, task string, seconds, temperature float64, t npu.Transcript) {
	usage := gin.H{"type": "duration", "seconds": int(math.Ceil(seconds))}
	switch format {
	case "text":
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(t.Text+"\n"))
	case "srt":
		c.Data(http.StatusOK, "application/x-subrip; charset=utf-8", []byte(subtitles(t.Segments, false)))
	case "vtt":
		c.Data(http.StatusOK, "text/vtt; charset=utf-8", []byte(subtitles(t.Segments, true)))
	case "verbose_json":
		segs := make([]transcriptSegment, len(t.Segments))
		for i, s := range t.Segments {
			segs[i] = transcriptSegment{ID: i, Seek: int(s.Start * 100), Start: s.Start, End: s.End,
				Text: s.Text, Tokens: []int{}, Temperature: temperature}
		}
		c.JSON(http.StatusOK, gin.H{"task": task, "language": t.Language, "duration": seconds,
			"text": t.Text, "segments": segs, "usage": usage})
	default:
		c.JSON(http.StatusOK, gin.H{"text": t.Text, "usage": usage})
	}
}

// subtitles renders segments as SubRip (numbered cues, comma before the
// milliseconds) or WebVTT (a header, a dot before them).
func subtitles(segs []npu.Segment, vtt bool) string {
	var b strings.Builder
	if vtt {
		b.WriteString("WEBVTT\n\n")
	}
	for i, s := range segs {
		if !vtt {
			fmt.Fprintf(&b, "%d\n", i+1)
		}
		fmt.Fprintf(&b, "%s --> %s\n%s\n\n", timestamp(s.Start, vtt), timestamp(s.End, vtt), strings.TrimSpace(s.Text))
	}
	return b.String()
}

func timestamp(seconds float64, vtt bool) string {
	ms := int64(math.Round(seconds * 1000))
	sep := ","
	if vtt {
		sep = "."
	}
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}
