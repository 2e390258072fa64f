// Package imagein turns the images clients send (data URLs, base64, and
// http(s) URLs when allowed) into the RGB pictures a vision model takes,
// within bounds: how many, how large the file, how many pixels. JPEG and
// PNG are decoded with the standard library.
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
	"time"

	"github.com/npud/npud/npu"
)

// Limits bound the images of one request.
type Limits struct {
	MaxImages int   // per request
	MaxBytes  int64 // per image, as sent (decoded from base64)
	MaxPixels int64 // per image, width × height
	// AllowURLs lets image_url name an http(s) address that npud fetches;
	// off, only data URLs are taken.
	AllowURLs bool
	// Client fetches URLs (nil: a client with FetchTimeout).
	Client *http.Client
}

// FetchTimeout bounds fetching one image URL.
const FetchTimeout = 15 * time.Second

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
func (l Limits) FromURL(ctx context.Context, url string) (npu.Image, error) {
	switch {
	case strings.HasPrefix(url, "data:"):
		meta, data, ok := strings.Cut(url[len("data:"):], ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return npu.Image{}, invalid("a data URL must be base64: data:image/png;base64,…")
		}
		return l.FromBase64(data)
	case strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://"):
		if !l.AllowURLs {
			return npu.Image{}, invalid("image URLs are not fetched (npud runs with --allow-image-urls=false): send the image as a data URL")
		}
		return l.fetch(ctx, url)
	}
	if url == "" {
		return npu.Image{}, invalid("an image_url part needs a url")
	}
	return npu.Image{}, invalid("an image URL must be a data URL (or http(s) with --allow-image-urls)")
}

// FromBase64 reads a base64 image (Ollama's images).
func (l Limits) FromBase64(data string) (npu.Image, error) {
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
	return l.Decode(b)
}

func (l Limits) fetch(ctx context.Context, url string) (npu.Image, error) {
	client := l.Client
	if client == nil {
		client = &http.Client{Timeout: FetchTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return npu.Image{}, invalid("%v", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return npu.Image{}, invalid("fetching it: %v", err)
	}
	defer func() { _ = resp.Body.Close() }() // read only
	if resp.StatusCode != http.StatusOK {
		return npu.Image{}, invalid("fetching it: %s", resp.Status)
	}
	limit := l.MaxBytes
	if limit <= 0 {
		limit = 1 << 30
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return npu.Image{}, invalid("fetching it: %v", err)
	}
	return l.Decode(b)
}

// Decode reads a JPEG or PNG file into RGB: three bytes a pixel, row by
// row, transparent pixels over white. The pixel count is checked from the
// header before the image is decoded, so a small file that claims a huge
// picture is refused without the memory.
func (l Limits) Decode(b []byte) (npu.Image, error) {
	if l.MaxBytes > 0 && int64(len(b)) > l.MaxBytes {
		return npu.Image{}, invalid("the image is larger than %d bytes (--max-image-bytes)", l.MaxBytes)
	}
	var decode func(io.Reader) (image.Image, error)
	var config func(io.Reader) (image.Config, error)
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		decode, config = png.Decode, png.DecodeConfig
	case bytes.HasPrefix(b, []byte{0xff, 0xd8}):
		decode, config = jpeg.Decode, jpeg.DecodeConfig
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
	if l.MaxPixels > 0 && int64(cfg.Width)*int64(cfg.Height) > l.MaxPixels {
		return npu.Image{}, invalid("the image is %dx%d: at most %d pixels are allowed (--max-image-pixels)", cfg.Width, cfg.Height, l.MaxPixels)
	}
	img, err := decode(bytes.NewReader(b))
	if err != nil {
		return npu.Image{}, invalid("%v", err)
	}
	return toRGB(img), nil
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
