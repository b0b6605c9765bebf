package temporal

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/config"
)

// A queue's TLS settings make the client's TLS: none, a client certificate,
// a CA to check the server with; files that are not what they should be
// are refused naming the setting.
func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hub"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert := write("cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyf := write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	junk := write("junk.pem", []byte("not a certificate\n"))

	if tc, err := TLSConfig(config.Queue{}); tc != nil || err != nil {
		t.Errorf("no settings: %v, %v", tc, err)
	}
	tc, err := TLSConfig(config.Queue{TLSCert: cert, TLSKey: keyf, TLSCA: cert})
	if err != nil || len(tc.Certificates) != 1 || tc.RootCAs == nil {
		t.Fatalf("cert, key and CA: %+v, %v", tc, err)
	}
	if tc, err := TLSConfig(config.Queue{TLSCA: cert}); err != nil || tc.RootCAs == nil || len(tc.Certificates) != 0 {
		t.Errorf("a CA alone: %+v, %v", tc, err)
	}
	for _, c := range []struct {
		q    config.Queue
		want string
	}{
		{config.Queue{TLSCert: cert, TLSKey: junk}, "client certificate (tls_cert"},
		{config.Queue{TLSCert: filepath.Join(dir, "missing.pem"), TLSKey: keyf}, "client certificate"},
		{config.Queue{TLSCA: junk}, "holds no PEM certificate"},
		{config.Queue{TLSCA: filepath.Join(dir, "missing.pem")}, "the queue's CA (tls_ca)"},
	} {
		if _, err := TLSConfig(c.q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.q, err, c.want)
		}
	}
}
