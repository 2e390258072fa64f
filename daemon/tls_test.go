package daemon_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "npud test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.TLSCert, c.TLSKey = certFile, keyFile }, nil)
	base := strings.Replace(srv.URL, "http://", "https://", 1)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	oc := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithHTTPClient(hc))
	stream := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "sim", MaxTokens: openai.Int(4),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("over TLS")}})
	n := 0
	for stream.Next() {
		n++
	}
	require.NoError(t, stream.Err())
	assert.Greater(t, n, 1)

	resp, err := daemontest.Get(t.Context(), nil, srv.URL+"/health") // plain HTTP to a TLS port
	if err == nil {
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a plain request is refused")
	}
}

func TestTLSWithBadFilesFailsAtStart(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.TLSCert, cfg.TLSKey = filepath.Join(t.TempDir(), "none.pem"), filepath.Join(t.TempDir(), "none.key")
	_, err := daemon.New(cfg, discardLogger())
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "TLS")
}

func TestOversizeHeaders(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.MaxHeaderBytes = 4096 }, nil)
	resp, _ := daemontest.NewClient(t, srv.URL).Do(t, "GET", "/health", "", "X-Big", strings.Repeat("a", 64<<10))
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}
