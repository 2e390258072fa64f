package modelstore

import (
	"bufio"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// unboundedTruncation is where a tokenizer's truncation length stops
// meaning a model's length: openvino-tokenizers writes 2^31-1 less the
// special tokens when the Hugging Face tokenizer has no model_max_length
// (openvino_tokenizers tokenizer_pipeline.py, TruncationStep.from_hf_object).
const unboundedTruncation = 1 << 24

// Truncation is how a folder's tokenizer truncates when asked to
// (truncation=true, as TextRerankPipeline and TextEmbeddingPipeline ask):
// its Truncate operation from openvino-tokenizers.
type Truncation struct {
	// MaxLength is the most tokens of text it keeps for one input, the
	// special tokens it adds around one text not counted
	// (model_max_length less those); 0: it sets no bound.
	MaxLength int
	// Left: it cuts a text's start, keeping its end (truncation_side
	// "left"); else its end.
	Left bool
	// Mode is how a pair shares MaxLength: "longest_first" (the only mode
	// openvino-tokenizers writes), "only_first" or "only_second".
	Mode string
}

// ErrNoTruncation is wrapped when a tokenizer has no Truncate operation npud
// can read.
var ErrNoTruncation = errors.New("no truncation in the tokenizer")

type irLayer struct {
	id, kind  string
	numInputs int
	elemType  string
	offset    int64
	size      int64
	padRight  string // RaggedToDense's pad_right
}

// Padding is how a folder's tokenizer pads a batch: the side and the id of
// its RaggedToDense (openvino-tokenizers writes pad_right from the Hugging
// Face tokenizer's padding_side, and the pad value from its pad token), which
// GenAI keeps as the default (make_tokenizer_stateful.cpp,
// MakePaddingSatateful: "pad it to the default side").
type Padding struct {
	Left bool
	ID   int64
}

// ReadPadding reads the RaggedToDense of the folder dir's
// openvino_tokenizer.xml: its pad_right attribute and its pad value (input
// 4, a constant in openvino_tokenizer.bin).
func ReadPadding(dir string) (Padding, error) {
	path := filepath.Join(dir, "openvino_tokenizer.xml")
	layers, edges, err := readIRGraph(path)
	if err != nil {
		return Padding{}, err
	}
	var dense *irLayer
	for i := range layers {
		if layers[i].kind == "RaggedToDense" {
			if dense != nil {
				return Padding{}, fmt.Errorf("%s: more than one RaggedToDense", path)
			}
			dense = &layers[i]
		}
	}
	if dense == nil {
		return Padding{}, fmt.Errorf("%s: no RaggedToDense: the tokenizer does not pad", path)
	}
	var value *irLayer
	for _, e := range edges {
		if e.toLayer == dense.id && e.toPort == "4" {
			for i := range layers {
				if layers[i].id == e.fromLayer {
					value = &layers[i]
				}
			}
		}
	}
	if value == nil || value.kind != "Const" {
		return Padding{}, fmt.Errorf("%s: the RaggedToDense's pad value is not a constant", path)
	}
	bin, err := os.Open(filepath.Join(dir, "openvino_tokenizer.bin"))
	if err != nil {
		return Padding{}, err
	}
	defer func() { _ = bin.Close() }() // read only
	id, err := readI32(bin, value)
	if err != nil {
		return Padding{}, fmt.Errorf("%s: the pad value: %w", path, err)
	}
	return Padding{Left: dense.padRight == "false", ID: int64(id)}, nil
}

type irEdge struct{ fromLayer, toLayer, toPort string }

// ReadTruncation reads the Truncate operation of the folder dir's
// openvino_tokenizer.xml: its max_length input (a constant, or a Select of
// the "truncation" state between that constant and a larger one, as
// openvino-tokenizers 2026 writes it: TruncationStep.get_ov_subgraph), its
// side and its mode (string constants), with their values from
// openvino_tokenizer.bin.
func ReadTruncation(dir string) (Truncation, error) {
	path := filepath.Join(dir, "openvino_tokenizer.xml")
	layers, edges, err := readIRGraph(path)
	if err != nil {
		return Truncation{}, err
	}
	var trunc *irLayer
	for i := range layers {
		if layers[i].kind == "Truncate" {
			if trunc != nil {
				return Truncation{}, fmt.Errorf("%s: more than one Truncate: %w", path, ErrNoTruncation)
			}
			trunc = &layers[i]
		}
	}
	if trunc == nil {
		return Truncation{}, fmt.Errorf("%s: %w", path, ErrNoTruncation)
	}
	byID := make(map[string]*irLayer, len(layers))
	for i := range layers {
		byID[layers[i].id] = &layers[i]
	}
	source := func(layer string, port int) *irLayer {
		for _, e := range edges {
			if e.toLayer == layer && e.toPort == strconv.Itoa(port) {
				return byID[e.fromLayer]
			}
		}
		return nil
	}
	// The Truncate's ports: a ragged input (begins, ends, data) per text,
	// then max_length, side and mode (openvino_tokenizers src/truncate.cpp).
	n := max(trunc.numInputs, 1)
	limit := source(trunc.id, 3*n)
	if limit != nil && limit.kind == "Select" {
		limit = source(limit.id, 1) // the branch taken when truncation is on
	}
	side, mode := source(trunc.id, 3*n+1), source(trunc.id, 3*n+2)
	if limit == nil || side == nil || mode == nil || limit.kind != "Const" || side.kind != "Const" || mode.kind != "Const" {
		return Truncation{}, fmt.Errorf("%s: the Truncate's length, side and mode are not constants: %w", path, ErrNoTruncation)
	}
	bin, err := os.Open(filepath.Join(dir, "openvino_tokenizer.bin"))
	if err != nil {
		return Truncation{}, err
	}
	defer func() { _ = bin.Close() }() // read only
	maxLength, err := readI32(bin, limit)
	if err != nil {
		return Truncation{}, fmt.Errorf("%s: the Truncate's length: %w", path, err)
	}
	sideText, err := readString(bin, side)
	if err != nil {
		return Truncation{}, fmt.Errorf("%s: the Truncate's side: %w", path, err)
	}
	modeText, err := readString(bin, mode)
	if err != nil {
		return Truncation{}, fmt.Errorf("%s: the Truncate's mode: %w", path, err)
	}
	t := Truncation{Left: sideText == "left", Mode: modeText}
	switch {
	case sideText != "left" && sideText != "right":
		return Truncation{}, fmt.Errorf("%s: the Truncate's side is %q: %w", path, sideText, ErrNoTruncation)
	case modeText != "longest_first" && modeText != "only_first" && modeText != "only_second":
		return Truncation{}, fmt.Errorf("%s: the Truncate's mode is %q: %w", path, modeText, ErrNoTruncation)
	case maxLength < 0:
		return Truncation{}, fmt.Errorf("%s: the Truncate's length is %d: %w", path, maxLength, ErrNoTruncation)
	case maxLength < unboundedTruncation:
		t.MaxLength = int(maxLength)
	}
	return t, nil
}

// readIRGraph reads the layers and edges of the IR at path, bounded.
func readIRGraph(path string) ([]irLayer, []irEdge, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }() // read only
	dec := xml.NewDecoder(bufio.NewReader(io.LimitReader(f, maxIRBytes)))
	var layers []irLayer
	var edges []irEdge
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			return layers, edges, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch el.Name.Local {
		case "layer":
			layers = append(layers, irLayer{id: attr(el, "id"), kind: attr(el, "type")})
		case "data":
			if len(layers) == 0 {
				continue
			}
			l := &layers[len(layers)-1]
			l.numInputs, _ = strconv.Atoi(attr(el, "m_num_inputs"))
			l.elemType = attr(el, "element_type")
			l.offset, _ = strconv.ParseInt(attr(el, "offset"), 10, 64)
			l.size, _ = strconv.ParseInt(attr(el, "size"), 10, 64)
			l.padRight = attr(el, "pad_right")
		case "edge":
			edges = append(edges, irEdge{fromLayer: attr(el, "from-layer"), toLayer: attr(el, "to-layer"), toPort: attr(el, "to-port")})
		}
	}
}

func readI32(bin io.ReaderAt, c *irLayer) (int32, error) {
	if c.elemType != "i32" || c.size != 4 {
		return 0, fmt.Errorf("a constant of %s, %d bytes, not one i32", c.elemType, c.size)
	}
	var b [4]byte
	if _, err := bin.ReadAt(b[:], c.offset); err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b[:])), nil
}

// readString reads a string constant as openvino-tokenizers writes one: a
// u8 tensor of the bytes.
func readString(bin io.ReaderAt, c *irLayer) (string, error) {
	if c.elemType != "u8" || c.size < 1 || c.size > 64 {
		return "", fmt.Errorf("a constant of %s, %d bytes, not a short string", c.elemType, c.size)
	}
	b := make([]byte, c.size)
	if _, err := bin.ReadAt(b, c.offset); err != nil {
		return "", err
	}
	return string(b), nil
}
