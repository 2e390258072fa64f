package imagein

import (
	"context"
	"image"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 25 item 3: the default fetch client refuses a real loopback server
// (it never sees the request), by address and by a name resolving to it;
// a closed port, a 404 and a refused address give one and the same text;
// no redirect is followed, even to an allowed address.
func TestFetchRefusesNonPublic(t *testing.T) {
	var hits atomic.Int32
	png := pngOf(t, onePixel())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/cat.png", http.StatusFound)
		case "/cat.png":
			_, _ = w.Write(png)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	closed, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + closed.Addr().String() + "/cat.png"
	require.NoError(t, closed.Close())

	byDefault := Limits{AllowURLs: true} // the client npud builds when none is given
	for _, url := range []string{
		srv.URL + "/cat.png",
		"http://localhost:" + port + "/cat.png",
		"http://[::ffff:127.0.0.1]:" + port + "/cat.png",
		closedURL,
	} {
		_, err := byDefault.Begin().FromURL(context.Background(), url)
		require.ErrorIs(t, err, ErrInvalid, url)
		assert.ErrorIs(t, err, errFetch, "one text for every failure: %s", url)
	}
	assert.Zero(t, hits.Load(), "the loopback server was never asked")

	allowed := Limits{AllowURLs: true, Client: NewFetchClient([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})}
	_, err = allowed.Begin().FromURL(context.Background(), srv.URL+"/missing.png")
	assert.ErrorIs(t, err, errFetch, "a 404 reads as any other failure")
	_, err = allowed.Begin().FromURL(context.Background(), closedURL)
	assert.ErrorIs(t, err, errFetch, "a closed port reads as any other failure")
	hits.Store(0)
	_, err = allowed.Begin().FromURL(context.Background(), srv.URL+"/redirect")
	assert.ErrorIs(t, err, errFetch, "a redirect is not followed")
	assert.EqualValues(t, 1, hits.Load(), "only the redirect itself was fetched")
	img, err := allowed.Begin().FromURL(context.Background(), srv.URL+"/cat.png")
	require.NoError(t, err)
	assert.Equal(t, 1, img.Width)
}

func TestFetchable(t *testing.T) {
	allow := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"93.184.216.34", true},
		{"2606:2800:220:1:248:1893:25c8:1946", true},
		{"127.0.0.1", false},
		{"::1", false},
		{"10.0.0.1", false},
		{"10.1.2.3", true}, // allowed by the operator
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"fd00:ec2::254", false},
		{"fe80::1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"100.64.0.1", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.1.0.9", true},
		{"64:ff9b::7f00:1", false}, // NAT64 of 127.0.0.1
		{"2002:7f00:1::", false},   // 6to4 of 127.0.0.1
	} {
		assert.Equal(t, tc.want, Fetchable(netip.MustParseAddr(tc.addr), allow), tc.addr)
	}
}

func onePixel() *image.Gray { return image.NewGray(image.Rect(0, 0, 1, 1)) }
