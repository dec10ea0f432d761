package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
)

// TrustOptions are the CAs sandboxes trust besides their image's.
type TrustOptions struct {
	CA []string `name:"ca" env:"DRYDOCK_SANDBOX_CA" placeholder:"FILE" help:"PEM files of CA certificates that sandboxes trust besides the image's own (comma-separated or repeated), e.g. the CA of a network that inspects TLS: installed into every sandbox's bundle, with SSL_CERT_FILE, CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE, PIP_CERT, GIT_SSL_CAINFO and NODE_EXTRA_CA_CERTS pointing at it."`
}

// maxCAFile bounds one --sandbox-ca file; a system bundle is ~200 KiB.
const maxCAFile = 1 << 20

// bundle reads and checks the files and returns their certificates as one
// PEM text, without whatever else the files held between them. A file that
// cannot be read, holds no certificate, or holds anything but certificates
// (a private key handed to every sandbox would be a leak) stops the server.
func (o TrustOptions) bundle(now time.Time, log *slog.Logger) ([]byte, error) {
	var out bytes.Buffer
	for _, path := range o.CA {
		if strings.TrimSpace(path) == "" {
			continue
		}
		certs, err := readCAFile(path)
		if err != nil {
			return nil, fmt.Errorf("--sandbox-ca %s: %w", path, err)
		}
		for _, c := range certs {
			if !c.IsCA {
				log.Warn("--sandbox-ca: a certificate is not a CA; it is trusted as given, which only tools that accept partial chains honour", "file", path, "subject", c.Subject.String())
			}
			if now.After(c.NotAfter) {
				log.Warn("--sandbox-ca: a certificate has expired", "file", path, "subject", c.Subject.String(), "not_after", c.NotAfter)
			}
			pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		}
		log.Info("sandboxes trust these CAs besides their image's", "file", path, "certificates", len(certs))
	}
	return out.Bytes(), nil
}

func readCAFile(path string) ([]*x509.Certificate, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCAFile {
		return nil, fmt.Errorf("over %d bytes; want PEM CA certificates", maxCAFile)
	}
	var certs []*x509.Certificate
	for n := 1; ; n++ {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is a %q, not a CERTIFICATE; give only CA certificates (never keys)", n, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("no PEM certificate in it (want -----BEGIN CERTIFICATE----- blocks)")
	}
	return certs, nil
}
