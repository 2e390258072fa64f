package imagein

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pngOf(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// hugePNG is a PNG whose header claims w×h pixels and carries none: a
// decompression bomb's shape, refused from the header alone.
func hugePNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestDecode(t *testing.T) {
	rgb := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	rgb.Set(0, 0, color.NRGBA{255, 0, 0, 255})
	rgb.Set(1, 0, color.NRGBA{0, 0, 255, 255})
	clear := image.NewNRGBA(image.Rect(0, 0, 1, 1)) // fully transparent
	gray := image.NewGray(image.Rect(0, 0, 1, 2))
	gray.Set(0, 1, color.Gray{Y: 200})
	var jpg bytes.Buffer
	solid := image.NewRGBA(image.Rect(0, 0, 16, 8))
	for i := range solid.Pix {
		solid.Pix[i] = 128
	}
	require.NoError(t, jpeg.Encode(&jpg, solid, &jpeg.Options{Quality: 95}))

	l := Limits{MaxBytes: 1 << 20, MaxPixels: 1 << 20}.Begin()
	img, err := l.Decode(pngOf(t, rgb))
	require.NoError(t, err)
	assert.Equal(t, 2, img.Width)
	assert.Equal(t, 1, img.Height)
	assert.Equal(t, []byte{255, 0, 0, 0, 0, 255}, img.RGB)

	img, err = l.Decode(pngOf(t, clear))
	require.NoError(t, err)
	assert.Equal(t, []byte{255, 255, 255}, img.RGB, "transparent is white")

	img, err = l.Decode(pngOf(t, gray))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 200, 200, 200}, img.RGB)

	img, err = l.Decode(jpg.Bytes())
	require.NoError(t, err)
	assert.Equal(t, 16, img.Width)
	assert.Equal(t, 8, img.Height)
	require.Len(t, img.RGB, 16*8*3)
	for _, v := range img.RGB {
		assert.InDelta(t, 128, int(v), 3)
	}
}

func TestRefusals(t *testing.T) {
	small := pngOf(t, image.NewGray(image.Rect(0, 0, 4, 4)))
	limits := Limits{MaxImages: 2, MaxBytes: 1 << 10, MaxPixels: 100}
	l := limits.Begin()
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"too many", func() error { return limits.CheckCount(3) }, "at most 2"},
		{"too many pixels, from the header", func() error { _, err := l.Decode(hugePNG(100000, 100000)); return err }, "at most 100 pixels"},
		{"too large a file", func() error { _, err := l.Decode(make([]byte, 2<<10)); return err }, "larger than 1024 bytes"},
		{"too large base64", func() error {
			_, err := l.FromBase64(base64.StdEncoding.EncodeToString(make([]byte, 4<<10)))
			return err
		}, "larger than"},
		{"not base64", func() error { _, err := l.FromBase64("!!!"); return err }, "not base64"},
		{"a GIF", func() error { _, err := l.Decode([]byte("GIF89a")); return err }, "JPEG and PNG"},
		{"a broken PNG", func() error { _, err := l.Decode(small[:30]); return err }, "invalid image"},
		{"a data URL without base64", func() error { _, err := l.FromURL(context.Background(), "data:image/png,xyz"); return err }, "base64"},
		{"an http URL when not allowed", func() error { _, err := l.FromURL(context.Background(), "http://127.0.0.1/x.png"); return err }, "--allow-image-urls"},
		{"another scheme", func() error { _, err := l.FromURL(context.Background(), "file:///etc/passwd"); return err }, "data URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	img, err := l.FromURL(context.Background(), "data:image/png;base64,"+base64.StdEncoding.EncodeToString(small))
	require.NoError(t, err)
	assert.Equal(t, 4, img.Width)
	img, err = l.FromBase64(base64.RawStdEncoding.EncodeToString(small))
	require.NoError(t, err, "without padding")
	assert.Equal(t, 4, img.Width)
	wrapped := base64.StdEncoding.EncodeToString(small)
	img, err = l.FromBase64(wrapped[:20] + "\r\n" + wrapped[20:])
	require.NoError(t, err, "with MIME line breaks")
	assert.Equal(t, 4, img.Width)
}

// The fetch client connects to the loopback test server only because the
// allow-list names loopback; by default it is refused (see TestFetchRefusesNonPublic).
func TestFetchWhenAllowed(t *testing.T) {
	body := pngOf(t, image.NewGray(image.Rect(0, 0, 3, 2)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing.png" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	l := Limits{MaxBytes: 1 << 20, MaxPixels: 1 << 20, AllowURLs: true, Client: NewFetchClient(loopback)}
	img, err := l.Begin().FromURL(context.Background(), srv.URL+"/cat.png")
	require.NoError(t, err)
	assert.Equal(t, 3, img.Width)
	_, err = l.Begin().FromURL(context.Background(), srv.URL+"/missing.png")
	assert.ErrorIs(t, err, errFetch)
	l.MaxBytes = 10
	_, err = l.Begin().FromURL(context.Background(), srv.URL+"/cat.png")
	assert.ErrorContains(t, err, "larger than 10 bytes")
}

// The 16-bit fast paths give what the generic path gives.
func TestSixteenBitPathsAgree(t *testing.T) {
	rect := image.Rect(0, 0, 3, 1)
	nrgba := image.NewNRGBA64(rect)
	nrgba.Set(0, 0, color.NRGBA64{0xffff, 0, 0, 0xffff})
	nrgba.Set(1, 0, color.NRGBA64{0, 0x8000, 0xffff, 0x8000})
	rgba := image.NewRGBA64(rect)
	rgba.Set(0, 0, color.RGBA64{0, 0xffff, 0, 0xffff})
	rgba.Set(1, 0, color.RGBA64{0x4000, 0x4000, 0x4000, 0x8000})
	gray := image.NewGray16(rect)
	gray.Set(2, 0, color.Gray16{0xc8ff})
	for _, img := range []image.Image{nrgba, rgba, gray} {
		generic := toRGB(struct{ image.Image }{img}) // hides the type: the At path
		assert.Equal(t, generic.RGB, toRGB(img).RGB, "%T", img)
	}
}
