// Package imagein turns the images clients send (data URLs, base64, and
// http(s) URLs when allowed) into the RGB pictures a vision model takes,
// within bounds: how many, how large the file, how many pixels, and how
// much memory they decode to, per request and across requests (Budget).
// JPEG and PNG are decoded with the standard library.
package imagein

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strings"

	"github.com/npud/npud/npu"
)

// Limits bound the images of one request.
type Limits struct {
	MaxImages int   // per request
	MaxBytes  int64 // per image, as sent (decoded from base64)
	MaxPixels int64 // per image, width × height
	// MaxDecodedBytes bounds the memory one request's images decode to:
	// the decoder's buffers at the depth it decodes to, and the RGB
	// pictures kept for the generation (0: no bound of its own).
	MaxDecodedBytes int64
	// Budget bounds decoded image memory across requests (nil: none).
	Budget *Budget
	// AllowURLs lets image_url name an http(s) address that npud fetches;
	// off, only data URLs are taken.
	AllowURLs bool
	// Client fetches URLs (nil: NewFetchClient(nil), which refuses
	// non-public addresses).
	Client *http.Client
}

// ErrInvalid is wrapped by every refusal of an image: the client's fault.
var ErrInvalid = errors.New("invalid image")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// CheckCount refuses more images than the limits allow.
func (l Limits) CheckCount(n int) error {
	if l.MaxImages > 0 && n > l.MaxImages {
		return invalid("%d images: at most %d are allowed per request (--max-images)", n, l.MaxImages)
	}
	return nil
}

// FromURL reads an OpenAI image_url: a data URL (data:image/png;base64,…)
// or, when allowed, an http(s) URL.
func (bt *Batch) FromURL(ctx context.Context, url string) (npu.Image, error) {
	switch {
	case strings.HasPrefix(url, "data:"):
		meta, data, ok := strings.Cut(url[len("data:"):], ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return npu.Image{}, invalid("a data URL must be base64: data:image/png;base64,…")
		}
		return bt.FromBase64(data)
	case strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://"):
		if !bt.limits.AllowURLs {
			return npu.Image{}, invalid("image URLs are not fetched (npud runs with --allow-image-urls=false): send the image as a data URL")
		}
		return bt.fetch(ctx, url)
	}
	if url == "" {
		return npu.Image{}, invalid("an image_url part needs a url")
	}
	return npu.Image{}, invalid("an image URL must be a data URL (or http(s) with --allow-image-urls)")
}

// FromBase64 reads a base64 image (Ollama's images).
func (bt *Batch) FromBase64(data string) (npu.Image, error) {
	l := bt.limits
	if l.MaxBytes > 0 && int64(base64.StdEncoding.DecodedLen(len(data))) > l.MaxBytes+2 {
		return npu.Image{}, invalid("the image is larger than %d bytes (--max-image-bytes)", l.MaxBytes)
	}
	data = strings.TrimSpace(data)
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		// Some clients leave the padding out.
		var rawErr error
		if b, rawErr = base64.RawStdEncoding.DecodeString(strings.TrimRight(data, "=")); rawErr != nil {
			return npu.Image{}, invalid("not base64: %v", err)
		}
	}
	return bt.Decode(b)
}

func (bt *Batch) fetch(ctx context.Context, url string) (npu.Image, error) {
	l := bt.limits
	client := l.Client
	if client == nil {
		client = NewFetchClient(nil)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return npu.Image{}, errFetch
	}
	resp, err := client.Do(req)
	if err != nil {
		// One text for every failure (refused, unreachable, timed out, a
		// non-public address, a redirect): the answer must not map the
		// network behind npud.
		return npu.Image{}, errFetch
	}
	defer func() { _ = resp.Body.Close() }() // read only
	if resp.StatusCode != http.StatusOK {
		return npu.Image{}, errFetch
	}
	limit := l.MaxBytes
	if limit <= 0 {
		limit = 1 << 30
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return npu.Image{}, errFetch
	}
	return bt.Decode(b)
}

// errFetch is the one answer to an image URL npud could not fetch.
var errFetch = invalid("the image URL could not be fetched (npud fetches only public http(s) addresses that answer 200 without a redirect)")

// Decode reads a JPEG or PNG file into RGB: three bytes a pixel, row by
// row, transparent pixels over white. The header is read first: the pixel
// count is checked, and the memory the decode takes (the decoder's
// buffers at the depth it decodes to, plus the RGB copy) is reserved from
// the request's bound and the budget before anything is allocated, so a
// small file that claims a huge or deep picture is refused without the
// memory. After the decode only the RGB copy stays reserved, until the
// batch is released.
func (bt *Batch) Decode(b []byte) (npu.Image, error) {
	l := bt.limits
	if l.MaxBytes > 0 && int64(len(b)) > l.MaxBytes {
		return npu.Image{}, invalid("the image is larger than %d bytes (--max-image-bytes)", l.MaxBytes)
	}
	var decode func(io.Reader) (image.Image, error)
	var config func(io.Reader) (image.Config, error)
	isJPEG := false
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		decode, config = png.Decode, png.DecodeConfig
	case bytes.HasPrefix(b, []byte{0xff, 0xd8}):
		decode, config, isJPEG = jpeg.Decode, jpeg.DecodeConfig, true
	default:
		return npu.Image{}, invalid("only JPEG and PNG images are supported")
	}
	cfg, err := config(bytes.NewReader(b))
	if err != nil {
		return npu.Image{}, invalid("%v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return npu.Image{}, invalid("the image has no pixels")
	}
	pixels := int64(cfg.Width) * int64(cfg.Height)
	if l.MaxPixels > 0 && pixels > l.MaxPixels {
		return npu.Image{}, invalid("the image is %dx%d: at most %d pixels are allowed (--max-image-pixels)", cfg.Width, cfg.Height, l.MaxPixels)
	}
	if bt.sizeOnly {
		return npu.Image{Width: cfg.Width, Height: cfg.Height}, nil
	}
	rgb := pixels * 3
	buffers := DecoderBytes(cfg, isJPEG && jpegProgressive(b))
	if err := bt.take(buffers + rgb); err != nil {
		return npu.Image{}, err
	}
	img, err := decode(bytes.NewReader(b))
	if err != nil {
		bt.drop(buffers + rgb)
		return npu.Image{}, invalid("%v", err)
	}
	out := toRGB(img)
	bt.drop(buffers)
	return out, nil
}

// DecoderBytes is the memory the standard library's decoder allocates for
// a picture of cfg: its pixels at the depth it decodes to (16-bit PNGs at
// 8 bytes a pixel, palette images at 1, JPEG's planes), and a progressive
// JPEG's coefficients (a 4-byte coefficient per sample and component).
func DecoderBytes(cfg image.Config, progressiveJPEG bool) int64 {
	pixels := int64(cfg.Width) * int64(cfg.Height)
	var perPixel, components int64
	if _, paletted := cfg.ColorModel.(color.Palette); paletted {
		perPixel, components = 1, 1
	} else {
		switch cfg.ColorModel {
		case color.GrayModel:
			perPixel, components = 1, 1
		case color.Gray16Model:
			perPixel, components = 2, 1
		case color.YCbCrModel:
			perPixel, components = 3, 3 // at most: 4:4:4 keeps full chroma planes
		case color.CMYKModel, color.RGBAModel, color.NRGBAModel:
			perPixel, components = 4, 4
		default: // RGBA64, NRGBA64 and anything unknown: the deepest
			perPixel, components = 8, 4
		}
	}
	n := pixels * perPixel
	if progressiveJPEG {
		n += pixels * components * 4
	}
	return n
}

// jpegProgressive reports whether a JPEG's frame is progressive (SOF2),
// walking its marker segments up to the first frame header.
func jpegProgressive(b []byte) bool {
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			return false
		}
		marker := b[i+1]
		if marker == 0xff { // fill byte
			i++
			continue
		}
		switch {
		case marker == 0xc2 || marker == 0xc6 || marker == 0xca || marker == 0xce:
			return true
		case marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc:
			return false
		case marker == 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker == 0x01:
			i += 2 // no length
			continue
		}
		i += 2 + (int(b[i+2])<<8 | int(b[i+3]))
	}
	return false
}

// toRGB copies img's pixels as RGB, with fast paths for what JPEG and PNG
// decode into.
func toRGB(img image.Image) npu.Image {
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	out := make([]byte, 0, w*h*3)
	switch src := img.(type) {
	case *image.YCbCr:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				yi, ci := src.YOffset(x, y), src.COffset(x, y)
				cr, cg, cb := color.YCbCrToRGB(src.Y[yi], src.Cb[ci], src.Cr[ci])
				out = append(out, cr, cg, cb)
			}
		}
	case *image.Gray:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				g := src.Pix[src.PixOffset(x, y)]
				out = append(out, g, g, g)
			}
		}
	case *image.NRGBA:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				p := src.Pix[src.PixOffset(x, y):]
				a := uint32(p[3])
				out = append(out, overWhite(uint32(p[0])*a/255, a), overWhite(uint32(p[1])*a/255, a), overWhite(uint32(p[2])*a/255, a))
			}
		}
	// 16-bit PNGs, read at their high bytes: At would allocate a color
	// per pixel, garbage the budget does not count.
	case *image.NRGBA64:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				p := src.Pix[src.PixOffset(x, y):]
				a := uint32(p[6])
				out = append(out, overWhite(uint32(p[0])*a/255, a), overWhite(uint32(p[2])*a/255, a), overWhite(uint32(p[4])*a/255, a))
			}
		}
	case *image.RGBA64: // premultiplied
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				p := src.Pix[src.PixOffset(x, y):]
				a := uint32(p[6])
				out = append(out, overWhite(uint32(p[0]), a), overWhite(uint32(p[2]), a), overWhite(uint32(p[4]), a))
			}
		}
	case *image.Gray16:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				g := src.Pix[src.PixOffset(x, y)]
				out = append(out, g, g, g)
			}
		}
	default:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				cr, cg, cb, ca := img.At(x, y).RGBA() // premultiplied, 16 bits
				a := ca >> 8
				out = append(out, overWhite(cr>>8, a), overWhite(cg>>8, a), overWhite(cb>>8, a))
			}
		}
	}
	return npu.Image{Width: w, Height: h, RGB: out}
}

// overWhite composites a premultiplied 8-bit channel with alpha a over white.
func overWhite(c, a uint32) byte { return byte(min(c+255-a, 255)) }
